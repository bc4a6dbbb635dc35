# Rules every experiment shares: the native tools and each experiment's resolved config.


rule native:
    input:
        NATIVE_SOURCES,
    output:
        # every tool native/Makefile builds: each folder of native/ with a main.c
        expand("native/build/{tool}", tool=pl_tools.names()),
    log:
        "results/logs/native.log",
    conda:
        "../../environment.yml"
    shell:
        "flock native/.build.lock make -s -C native > {log} 2>&1"


rule experiment_config:
    # The resolved config block (profile applied, command-line --config included). Its params
    # are the block itself, so editing the config re-runs exactly the affected experiment.
    output:
        "results/{experiment}/config.json",
    params:
        block=lambda wc: json.dumps({**CFG[wc.experiment], "scratch_dir": CFG["scratch_dir"]}, sort_keys=True),
    log:
        "results/logs/{experiment}_config.log",
    conda:
        "../../environment.yml"
    shell:
        "pagelab pipeline write-json --output {output} {params.block:q} > {log} 2>&1"


rule notebook_html:
    input:
        "results/{experiment}/{experiment}.ipynb",
    output:
        "results/{experiment}/{experiment}.html",
    log:
        "results/logs/{experiment}_html.log",
    conda:
        "../../environment.yml"
    shell:
        "jupyter nbconvert --to html --output {wildcards.experiment}.html {input} > {log} 2>&1"


rule tidy:
    # One Parquet row per trial (counters as columns), then the checks: no failed trial
    # counted, every configuration present, required columns and counters non-empty.
    input:
        config="results/{experiment}/config.json",
        trials="results/{experiment}/trials.csv",
    output:
        parquet="results/{experiment}/trials.parquet",
        check="results/{experiment}/check.txt",
    params:
        code=ANALYSIS_CODE,
    log:
        "results/logs/{experiment}_tidy.log",
    conda:
        "../../environment.yml"
    shell:
        "pagelab pipeline tidy {wildcards.experiment} --config {input.config} --results results/{wildcards.experiment}"
        " --output {output.parquet} > {log} 2>&1"


rule index:
    # results/index.html: one page linking the paper, the verdicts, the comparison with the
    # reference machine and each experiment's HTML (what `make` names at its end).
    input:
        paper="results/paper.pdf",
        html=expand("results/{experiment}/{experiment}.html", experiment=EXPERIMENTS),
        verdicts="results/claims/verdicts.csv",
        compare="results/compare/section.tex",
    output:
        "results/index.html",
    log:
        "results/logs/index.log",
    conda:
        "../../environment.yml"
    shell:
        "pagelab pipeline index --results results --output {output} > {log} 2>&1"
