# readyboost (seed 000): recovery after memory hogs, swap on the emulated disk, flash tier, zswap, zram, own disk.


rule readyboost:
    input:
        config="results/readyboost/config.json",
        hog="native/build/hog",
        simdisk="native/build/simdisk",
    output:
        "results/readyboost/trials.csv",
        "results/readyboost/provenance.json",
    log:
        "results/logs/readyboost.log",
    benchmark:
        "results/benchmarks/readyboost.tsv"
    resources:
        machine=1,
    shell:
        "pagelab trial readyboost --config {input.config} --outdir results/readyboost > {log} 2>&1"


rule readyboost_notebook:
    input:
        notebook="notebooks/readyboost.ipynb",
        trials="results/readyboost/trials.csv",
        provenance="results/readyboost/provenance.json",
    output:
        notebook="results/readyboost/readyboost.ipynb",
        figure="results/readyboost/readyboost.pdf",
        table="results/readyboost/table.tex",
        macros="results/readyboost/macros.tex",
        measurements="results/readyboost/measurements.json",
    log:
        "results/logs/readyboost_notebook.log",
    shell:
        "papermill --cwd . -k python3 {input.notebook} {output.notebook}"
        " -p results_dir results/readyboost -p profile {PROFILE} > {log} 2>&1"
