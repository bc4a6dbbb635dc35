# The pipeline's entry point; everything lives in workflow/ (snakemake-workflow-template layout).
include: "workflow/Snakefile"
