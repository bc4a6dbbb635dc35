# pagein (seed 000): page-in from swap on the emulated 2008 disk, access order and page-cluster.


rule pagein:
    input:
        config="results/pagein/config.json",
        hog="native/build/hog",
        simdisk="native/build/simdisk",
    output:
        "results/pagein/trials.csv",
        "results/pagein/provenance.json",
    log:
        "results/logs/pagein.log",
    benchmark:
        "results/benchmarks/pagein.tsv"
    resources:
        machine=1,
    shell:
        "pagelab trial pagein --config {input.config} --outdir results/pagein > {log} 2>&1"


rule pagein_notebook:
    input:
        notebook="notebooks/pagein.ipynb",
        trials="results/pagein/trials.csv",
        provenance="results/pagein/provenance.json",
    output:
        notebook="results/pagein/pagein.ipynb",
        figure="results/pagein/pagein.pdf",
        table="results/pagein/table.tex",
        macros="results/pagein/macros.tex",
        measurements="results/pagein/measurements.json",
    log:
        "results/logs/pagein_notebook.log",
    shell:
        "papermill --cwd . -k python3 {input.notebook} {output.notebook}"
        " -p results_dir results/pagein -p profile {PROFILE} > {log} 2>&1"
