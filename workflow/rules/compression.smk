# compression (seeds 003, 004): zswap and zram compressors against page compressibility.


rule compression:
    input:
        config="results/compression/config.json",
        hog="native/build/hog",
    output:
        "results/compression/trials.csv",
        "results/compression/provenance.json",
    log:
        "results/logs/compression.log",
    benchmark:
        "results/benchmarks/compression.tsv"
    resources:
        machine=1,
    shell:
        "pagelab trial compression --config {input.config} --outdir results/compression > {log} 2>&1"


rule compression_notebook:
    input:
        notebook="notebooks/compression.ipynb",
        trials="results/compression/trials.csv",
        provenance="results/compression/provenance.json",
    output:
        notebook="results/compression/compression.ipynb",
        figure="results/compression/compression.pdf",
        table="results/compression/table.tex",
        macros="results/compression/macros.tex",
        measurements="results/compression/measurements.json",
    log:
        "results/logs/compression_notebook.log",
    shell:
        "papermill --cwd . -k python3 {input.notebook} {output.notebook}"
        " -p results_dir results/compression -p profile {PROFILE} > {log} 2>&1"
