# The paper: published claims table, verdicts and their figure, every experiment's generated
# files, latexmk.


rule published_claims:
    input:
        claims="data/published/claims.csv",
    output:
        table="results/published/claims.tex",
        macros="results/published/macros.tex",
    params:
        code=ANALYSIS_CODE,
    log:
        "results/logs/published_claims.log",
    conda:
        "../../environment.yml"
    shell:
        "pagelab pipeline published --claims {input.claims} --table {output.table} --macros {output.macros} > {log} 2>&1"


rule claims:
    # The published-vs-reproduced verdicts, from every experiment's measurements.json.
    input:
        claims="data/published/claims.csv",
        measurements=expand("results/{experiment}/measurements.json", experiment=EXPERIMENTS),
    output:
        tex="results/claims/verdicts.tex",
        csv=report("results/claims/verdicts.csv", caption="../report/verdicts.rst", category="Verdicts"),
        macros="results/claims/macros.tex",
    params:
        code=ANALYSIS_CODE,
        profile=PROFILE,
    log:
        "results/logs/claims.log",
    conda:
        "../../environment.yml"
    shell:
        "pagelab pipeline verdicts --results results --claims {input.claims} --profile {params.profile}"
        " --tex {output.tex} --csv {output.csv} --macros {output.macros} > {log} 2>&1"


rule verdict_figure:
    # Every claim on every run (the reference machine's recorded profiles, from their stored
    # measurements, and this run): the forest plot beside the verdict table, and its HTML page.
    input:
        claims="data/published/claims.csv",
        recorded="data/published/recorded_measurements.json",
        measurements=expand("results/{experiment}/measurements.json", experiment=EXPERIMENTS),
    output:
        pdf="results/claims/verdicts-forest.pdf",
        png="results/claims/verdicts-forest.png",
        html="results/claims/verdicts.html",
    params:
        code=ANALYSIS_CODE,
        profile=PROFILE,
        recording=RECORDING,
    log:
        "results/logs/verdict_figure.log",
    conda:
        "../../environment.yml"
    shell:
        "pagelab claims figure --results results --claims {input.claims} --profile {params.profile}"
        " --recording={params.recording:q} --output {output.pdf} --html {output.html} > {log} 2>&1"


rule reference_compare:
    # "This machine against the reference machine": pagelab compare of this run with the
    # reference machine's recording of the same profile, when there is one and this run is not it.
    input:
        trials=expand("results/{experiment}/trials.csv", experiment=EXPERIMENTS),
        configs=expand("results/{experiment}/config.json", experiment=EXPERIMENTS),
    output:
        "results/compare/section.tex",
    params:
        code=ANALYSIS_CODE,
        reference=pl_recording.reference_dir(config.get("reference", ""), PROFILE, RECORDING),
    log:
        "results/logs/reference_compare.log",
    conda:
        "../../environment.yml"
    shell:
        "pagelab pipeline compare-section --reference={params.reference:q} --results results --output {output} > {log} 2>&1"


rule appendix:
    # The generated reproducibility appendix: machine, paging state, versions, per-experiment
    # provenance and compute time, the command for each claim.
    input:
        provenance=expand("results/{experiment}/provenance.json", experiment=EXPERIMENTS),
        trials=expand("results/{experiment}/trials.csv", experiment=EXPERIMENTS),
        claims="data/published/claims.csv",
        changelog="data/published/claims_changelog.csv",
        verdicts="results/claims/verdicts.csv",
        devices=sorted(glob.glob("config/devices/*.yaml")),
    output:
        macros="results/appendix/macros.tex",
        tables=expand("results/appendix/{t}.tex", t=["knobs", "versions", "experiments", "claims", "changelog"]),
    params:
        code=ANALYSIS_CODE,
        profile=PROFILE,
        experiments=EXPERIMENTS,
    log:
        "results/logs/appendix.log",
    conda:
        "../../environment.yml"
    shell:
        "pagelab pipeline appendix --results results --output results/appendix --profile {params.profile}"
        " {params.experiments} > {log} 2>&1"


rule paper:
    input:
        sources=sorted(glob.glob("paper/**/*.tex", recursive=True) + glob.glob("paper/*.bib")),
        claims="results/published/claims.tex",
        published="results/published/macros.tex",
        appendix=rules.appendix.output,
        verdicts="results/claims/verdicts.tex",
        verdict_macros="results/claims/macros.tex",
        verdict_figure=rules.verdict_figure.output,
        compare="results/compare/section.tex",
        # the fleet's section, once a fleet merge exists (docs/fleet.md)
        fleet=lambda wc: [f for f in ["results/fleet/section.tex"] if os.path.exists(f)],
        generated=expand("results/{experiment}/{file}", experiment=EXPERIMENTS,
                         file=["macros.tex", "table.tex", "measurements.json"]),
        figures=expand("results/{experiment}/{experiment}.pdf", experiment=EXPERIMENTS),
        html=expand("results/{experiment}/{experiment}.html", experiment=EXPERIMENTS),
        checks=expand("results/{experiment}/check.txt", experiment=EXPERIMENTS),
    output:
        report("results/paper.pdf", caption="../report/paper.rst", category="Paper"),
    params:
        experiments=EXPERIMENTS,
    log:
        "results/logs/paper.log",
    conda:
        "../../environment.yml"
    shell:
        "pagelab pipeline paper --output {output} {params.experiments} > {log} 2>&1"
