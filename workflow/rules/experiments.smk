# Every experiment's two steps, by name: its trials (`pagelab trial <name>`, one measurement job
# at a time) and its papermill notebook. An experiment is found through config.experiments();
# only what is truly specific to one has a rule file of its own (seekmodel.smk).

NOTEBOOK_GENERIC = [e for e in EXPERIMENTS if e != "seekmodel"]


rule trial:
    input:
        config="results/{experiment}/config.json",
        tools=rules.native.output,
    output:
        "results/{experiment}/trials.csv",
        "results/{experiment}/provenance.json",
    wildcard_constraints:
        experiment="|".join(EXPERIMENTS),
    log:
        "results/logs/{experiment}.log",
    benchmark:
        "results/benchmarks/{experiment}.tsv"
    resources:
        machine=1,  # measurements never overlap each other
    conda:
        "../../environment.yml"
    shell:
        "pagelab trial {wildcards.experiment} --config {input.config} --output results/{wildcards.experiment}"
        " > {log} 2>&1"


rule notebook:
    input:
        notebook="notebooks/{experiment}.ipynb",
        trials="results/{experiment}/trials.csv",
        provenance="results/{experiment}/provenance.json",
    output:
        notebook="results/{experiment}/{experiment}.ipynb",
        figure="results/{experiment}/{experiment}.pdf",
        table="results/{experiment}/table.tex",
        macros="results/{experiment}/macros.tex",
        measurements="results/{experiment}/measurements.json",
    wildcard_constraints:
        experiment="|".join(NOTEBOOK_GENERIC),
    params:
        profile=PROFILE,
    log:
        "results/logs/{experiment}_notebook.log",
    conda:
        "../../environment.yml"
    shell:
        "papermill --cwd . -k python3 {input.notebook} {output.notebook}"
        " -p results_dir results/{wildcards.experiment} -p profile {params.profile} > {log} 2>&1"
