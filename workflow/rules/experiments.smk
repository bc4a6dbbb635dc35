# Every experiment's two steps, by name: its trials (`pagelab trial <name>`, one measurement job
# at a time) and its papermill notebook (notebooks/_template.ipynb with the experiment's
# narrative, notebooks/<name>.ipynb, put in by `pagelab pipeline notebook` and piped into
# `pagelab pipeline execute`, papermill with a kernel that did not come up started again): its
# descriptor's `analyse` writes the outputs, further tables such as seekmodel's spans.tex beside
# them. An experiment is found through config.experiments().


rule trial:
    input:
        config="results/{experiment}/config.json",
        # a recorded run is replayed, not measured: no native tool (nor a compiler) is needed
        tools=[] if RECORDING else rules.native.output,
    output:
        # in `make report`, beside the experiment's figure: its trials, one row each
        report("results/{experiment}/trials.csv", caption="../report/trials.rst",
               category="Experiments", subcategory="{experiment}"),
        "results/{experiment}/provenance.json",
    wildcard_constraints:
        experiment="|".join(EXPERIMENTS),
    params:
        # a changed device profile re-runs the trials measured on it (their records then no
        # longer match the run hash: pagelab.system.config.run_hash), the tier model among them
        devices=lambda wc: json.dumps(pl_config.device_profiles(wc.experiment, CFG[wc.experiment],
                                                                also=pl_config.tier_of(CFG[wc.experiment])),
                                      sort_keys=True),
    log:
        "results/logs/{experiment}.log",
    benchmark:
        "results/benchmarks/{experiment}.tsv"
    # every core Snakemake was given: no other job (a notebook, a table, the paper) runs beside a
    # measurement
    threads: lambda wildcards: workflow.cores
    resources:
        machine=1,  # measurements never overlap each other
    # the trials first, back to back: a notebook ready between two experiments' trials waits,
    # and the notebooks, tables and paper then share the cores after the last trial, two at a
    # time here, rather than one at a time between the trials
    priority: 1
    conda:
        "../../environment.yml"
    shell:
        "pagelab trial {wildcards.experiment} --config {input.config} --output results/{wildcards.experiment}"
        " > {log} 2>&1"


rule notebook:
    input:
        template="notebooks/_template.ipynb",
        notebook="notebooks/{experiment}.ipynb",
        trials="results/{experiment}/trials.csv",
        provenance="results/{experiment}/provenance.json",
    output:
        notebook="results/{experiment}/{experiment}.ipynb",
        # in `make report` (snakemake --report), one subcategory per experiment
        figure=report("results/{experiment}/{experiment}.pdf", caption="../report/experiments.rst",
                      category="Experiments", subcategory="{experiment}"),
        table="results/{experiment}/table.tex",
        macros="results/{experiment}/macros.tex",
        measurements="results/{experiment}/measurements.json",
    wildcard_constraints:
        experiment="|".join(EXPERIMENTS),
    params:
        code=ANALYSIS_CODE,
        profile=PROFILE,
    log:
        "results/logs/{experiment}_notebook.log",
    conda:
        "../../environment.yml"
    shell:
        "(pagelab pipeline notebook {wildcards.experiment}"
        " | pagelab pipeline execute - {output.notebook}"
        " -p results_dir results/{wildcards.experiment} -p profile {params.profile}) > {log} 2>&1"
