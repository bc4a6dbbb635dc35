# standby (seed 004): trimmed pages, the swap cache, buffered IO that flushes it, compression.


rule standby:
    input:
        config="results/standby/config.json",
        hog="native/build/hog",
        cacheflood="native/build/cacheflood",
    output:
        "results/standby/trials.csv",
        "results/standby/provenance.json",
    log:
        "results/logs/standby.log",
    benchmark:
        "results/benchmarks/standby.tsv"
    resources:
        machine=1,
    shell:
        "pagelab trial standby --config {input.config} --outdir results/standby > {log} 2>&1"


rule standby_notebook:
    input:
        notebook="notebooks/standby.ipynb",
        trials="results/standby/trials.csv",
        provenance="results/standby/provenance.json",
    output:
        notebook="results/standby/standby.ipynb",
        figure="results/standby/standby.pdf",
        table="results/standby/table.tex",
        macros="results/standby/macros.tex",
        measurements="results/standby/measurements.json",
    log:
        "results/logs/standby_notebook.log",
    shell:
        "papermill --cwd . -k python3 {input.notebook} {output.notebook}"
        " -p results_dir results/standby -p profile {PROFILE} > {log} 2>&1"
