# seekmodel (seed 003): random-read service time against block size on this machine's disk.


rule seekmodel:
    input:
        config="results/seekmodel/config.json",
        iobench="native/build/iobench",
    output:
        "results/seekmodel/trials.csv",
        "results/seekmodel/provenance.json",
    log:
        "results/logs/seekmodel.log",
    benchmark:
        "results/benchmarks/seekmodel.tsv"
    resources:
        machine=1,  # measurements never overlap each other
    shell:
        "pagelab trial seekmodel --config {input.config} --outdir results/seekmodel > {log} 2>&1"


rule seekmodel_notebook:
    input:
        notebook="notebooks/seekmodel.ipynb",
        trials="results/seekmodel/trials.csv",
        provenance="results/seekmodel/provenance.json",
    output:
        notebook="results/seekmodel/seekmodel.ipynb",
        figure="results/seekmodel/seekmodel.pdf",
        table="results/seekmodel/table.tex",
        macros="results/seekmodel/macros.tex",
        models64k="results/seekmodel/models64k.tex",
        spans="results/seekmodel/spans.tex",
        measurements="results/seekmodel/measurements.json",
    log:
        "results/logs/seekmodel_notebook.log",
    shell:
        "papermill --cwd . -k python3 {input.notebook} {output.notebook}"
        " -p results_dir results/seekmodel -p profile {PROFILE} > {log} 2>&1"
