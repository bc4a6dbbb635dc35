# crystalmark (seed 003): CrystalMark 2004R2 on this disk, fresh and reused, direct and buffered.


rule crystalmark:
    input:
        config="results/crystalmark/config.json",
        iobench="native/build/iobench",
    output:
        "results/crystalmark/trials.csv",
        "results/crystalmark/provenance.json",
    log:
        "results/logs/crystalmark.log",
    benchmark:
        "results/benchmarks/crystalmark.tsv"
    resources:
        machine=1,
    shell:
        "pagelab trial crystalmark --config {input.config} --outdir results/crystalmark > {log} 2>&1"


rule crystalmark_notebook:
    input:
        notebook="notebooks/crystalmark.ipynb",
        trials="results/crystalmark/trials.csv",
        provenance="results/crystalmark/provenance.json",
    output:
        notebook="results/crystalmark/crystalmark.ipynb",
        figure="results/crystalmark/crystalmark.pdf",
        table="results/crystalmark/table.tex",
        macros="results/crystalmark/macros.tex",
        measurements="results/crystalmark/measurements.json",
    log:
        "results/logs/crystalmark_notebook.log",
    shell:
        "papermill --cwd . -k python3 {input.notebook} {output.notebook}"
        " -p results_dir results/crystalmark -p profile {PROFILE} > {log} 2>&1"
