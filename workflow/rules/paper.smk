# The paper: published claims table, every experiment's generated files, latexmk.


rule published_claims:
    input:
        "data/published/claims.csv",
    output:
        "results/published/claims.tex",
    log:
        "results/logs/published_claims.log",
    run:
        from pagelab.published import write_claims_table

        write_claims_table(output[0], input[0])


rule paper:
    input:
        sources=sorted(glob.glob("paper/**/*.tex", recursive=True)),
        claims="results/published/claims.tex",
        seekmodel=rules.seekmodel_notebook.output,
        seekmodel_html="results/seekmodel/seekmodel.html",
    output:
        "results/paper.pdf",
    log:
        "results/logs/paper.log",
    shell:
        "pagelab paper --out {output} > {log} 2>&1"
