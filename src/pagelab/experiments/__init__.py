"""One module per experiment, named like its rule, config block, notebook and paper section.

Each module has `run(config, outdir)` (the measurement) and the analysis helpers its notebook
calls.
"""
