# The experiment matrix on many hosts (config `fleet:`; docs/fleet.md).
# One trial job per (host, experiment), sent to its host by the executor: the string resource
# `host` for cluster-generic's submit command ({resources.host}), `slurm_extra` for Slurm
# (--nodelist, --exclusive). One measurement per host at a time comes from the submit path (a
# lock on the host; Slurm's exclusive node), not from a Snakemake resource: a global resource
# would serialise every host. Everything else (configs, notebooks, the merge) is a local job.
# Two steps: `fleet_trials` (with --keep-going: a failed host loses only its own jobs), then
# `fleet_merge`, whose inputs are the jobs that came back, so it never waits for a failed host.
from pagelab import experiments as pl_experiments
from pagelab.run import fleet as pl_fleet
from pagelab.run import fleetplan as pl_fleetplan

try:
    FLEET_JOBS = pl_fleet.jobs(config)
    # with each split run's whole block, the config its merged results get (fleet_cells)
    FLEET_PLAN = pl_fleet.plan(config, pl_experiments.split)
except pl_config.ConfigError as exc:
    raise WorkflowError(f"config/config.yaml: fleet: {exc}")
FLEET_HOSTS = [h["name"] for h in FLEET_PLAN["hosts"]]


# The plan's order reaches the cluster twice. Snakemake's `priority:` picks which ready jobs it
# submits first when they do not all fit `--jobs`; the jobs it submits together go out in the
# order of its ready set, not by priority (its job selector keeps that order). So each job also
# carries its place in the plan as Slurm's `--nice`: Slurm starts a node's pending jobs highest
# priority first (a job submitted to an idle node starts at once, whatever its place). A host's
# planned time is the same in any order of its own jobs; the order matters where jobs may take
# any free node.
FLEET_HOST_RE = "|".join(FLEET_HOSTS) or "(?!)"


ruleorder: fleet_config > experiment_config


rule fleet_config:
    output:
        "results/fleet/{host}/{experiment}/config.json",
    wildcard_constraints:
        host=FLEET_HOST_RE,
        experiment="|".join(EXPERIMENTS),
    params:
        block=lambda wc: json.dumps(pl_fleet.block(config, wc.host, wc.experiment, split=pl_experiments.split(wc.experiment)), sort_keys=True),
    log:
        "results/logs/fleet/{host}/{experiment}_config.log",
    localrule: True
    conda:
        "../../environment.yml"
    shell:
        "pagelab pipeline write-json --output {output} {params.block:q} > {log} 2>&1"


rule fleet_trial:
    input:
        config="results/fleet/{host}/{experiment}/config.json",
        tools=rules.native.output,
    output:
        "results/fleet/{host}/{experiment}/trials.csv",
        "results/fleet/{host}/{experiment}/provenance.json",
    wildcard_constraints:
        host=FLEET_HOST_RE,
        experiment="|".join(EXPERIMENTS),
    params:
        # as the trial rule: a changed device profile re-runs the trials measured on it
        devices=lambda wc: json.dumps(
            pl_config.device_profiles(wc.experiment, block := pl_fleet.block(config, wc.host, wc.experiment, split=pl_experiments.split(wc.experiment)),
                                      also=pl_config.tier_of(block)), sort_keys=True
        ),
    log:
        "results/logs/fleet/{host}/{experiment}.log",
    priority: lambda wc: len(FLEET_JOBS) - pl_fleetplan.submission_place(FLEET_JOBS, FLEET_HOSTS, FLEET_PLAN['profile'], wc.host, wc.experiment, lambda: pl_experiments.job_shares(config))
    resources:
        host=lambda wc: wc.host,
        slurm_extra=lambda wc: f"--nodelist={wc.host} --exclusive --nice={pl_fleetplan.submission_place(FLEET_JOBS, FLEET_HOSTS, FLEET_PLAN['profile'], wc.host, wc.experiment, lambda: pl_experiments.job_shares(config))}",
    conda:
        "../../environment.yml"
    shell:
        "pagelab fleet trial {wildcards.host} {wildcards.experiment} --config {input.config}"
        " --output results/fleet/{wildcards.host}/{wildcards.experiment} > {log} 2>&1"


rule fleet_notebook:
    input:
        template="notebooks/_template.ipynb",
        notebook="notebooks/{experiment}.ipynb",
        trials="results/fleet/{host}/{experiment}/trials.csv",
    output:
        notebook="results/fleet/{host}/{experiment}/{experiment}.ipynb",
        measurements="results/fleet/{host}/{experiment}/measurements.json",
    wildcard_constraints:
        host=FLEET_HOST_RE,
        experiment="|".join(EXPERIMENTS),
    params:
        code=ANALYSIS_CODE,
        profile=FLEET_PLAN["profile"],
    log:
        "results/logs/fleet/{host}/{experiment}_notebook.log",
    localrule: True
    conda:
        "../../environment.yml"
    shell:
        "(pagelab pipeline notebook {wildcards.experiment}"
        " | pagelab pipeline execute - {output.notebook}"
        " -p results_dir results/fleet/{wildcards.host}/{wildcards.experiment}"
        " -p profile {params.profile}) > {log} 2>&1"


rule fleet_plan:
    output:
        "results/fleet/fleet.json",
    params:
        plan=json.dumps(FLEET_PLAN, sort_keys=True),
    log:
        "results/logs/fleet/plan.log",
    localrule: True
    conda:
        "../../environment.yml"
    shell:
        "pagelab pipeline write-json --output {output} {params.plan:q} > {log} 2>&1"


rule fleet_trials:
    # every host's trials (run with --keep-going: a host that fails loses only its own jobs)
    input:
        [f"results/fleet/{h}/{e}/trials.csv" for h, e in FLEET_JOBS],
    localrule: True


rule fleet_merge:
    # whatever came back: a host whose trials are missing is named in the table, never awaited
    input:
        notebook="notebooks/fleet.ipynb",
        plan="results/fleet/fleet.json",
        measurements=lambda wc: pl_fleet.present(config),
    output:
        notebook="results/fleet/fleet.ipynb",
        csv="results/fleet/merge.csv",
        tex="results/fleet/section.tex",
        figure="results/fleet/headlines.pdf",
    log:
        "results/logs/fleet/merge.log",
    localrule: True
    conda:
        "../../environment.yml"
    shell:
        "pagelab pipeline execute {input.notebook} {output.notebook} -p plan {input.plan}"
        " -p results results/fleet -p logs results/logs/fleet -p csv_out {output.csv} -p tex_out {output.tex}"
        " > {log} 2>&1"


# An experiment whose run the fleet splits between its hosts (Experiment.split: payoff's grid,
# disjoint cells per host; readyboost, disjoint arms): the shares that came back merged into one
# results directory (`pagelab fleet cells`, which checks by Experiment.cell_of that no cell came
# from two hosts), and its notebook there (payoff's map of every cell, readyboost's ratios).
FLEET_SPLIT = sorted({e for _, e in FLEET_JOBS if pl_fleet.is_split(config, e, pl_experiments.split(e))})


rule fleet_cells:
    input:
        plan="results/fleet/fleet.json",
        trials=lambda wc: pl_fleet.present(config, name="trials.csv", experiment=wc.experiment),
    output:
        trials="results/fleet/merged/{experiment}/trials.csv",
        config="results/fleet/merged/{experiment}/config.json",
    wildcard_constraints:
        experiment="|".join(FLEET_SPLIT) or "(?!)",
    log:
        "results/logs/fleet/merged_{experiment}.log",
    localrule: True
    conda:
        "../../environment.yml"
    shell:
        "pagelab fleet cells {wildcards.experiment} --plan {input.plan} --results results/fleet > {log} 2>&1"


rule fleet_cells_notebook:
    input:
        template="notebooks/_template.ipynb",
        notebook="notebooks/{experiment}.ipynb",
        trials="results/fleet/merged/{experiment}/trials.csv",
    output:
        notebook="results/fleet/merged/{experiment}/{experiment}.ipynb",
        figure="results/fleet/merged/{experiment}/{experiment}.pdf",
    wildcard_constraints:
        experiment="|".join(FLEET_SPLIT) or "(?!)",
    params:
        code=ANALYSIS_CODE,
        profile=FLEET_PLAN["profile"],
    log:
        "results/logs/fleet/merged_{experiment}_notebook.log",
    localrule: True
    conda:
        "../../environment.yml"
    shell:
        "(pagelab pipeline notebook {wildcards.experiment}"
        " | pagelab pipeline execute - {output.notebook}"
        " -p results_dir results/fleet/merged/{wildcards.experiment} -p profile {params.profile}) > {log} 2>&1"


rule fleet_maps:
    # every split run's merged results and its notebook (payoff's map of the grid's cells,
    # readyboost's arms, ratios and claims)
    input:
        [f"results/fleet/merged/{e}/{e}.pdf" for e in FLEET_SPLIT],
    localrule: True
