# seekmodel's notebook also writes the paper's model comparison and span tables; its trials run
# through the generic rule in experiments.smk.


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
    params:
        profile=PROFILE,
    log:
        "results/logs/seekmodel_notebook.log",
    conda:
        "../../environment.yml"
    shell:
        "papermill --cwd . -k python3 {input.notebook} {output.notebook}"
        " -p results_dir results/seekmodel -p profile {params.profile} > {log} 2>&1"
