"""The experiments layer: one module per experiment, named like its rule, config block, notebook
and paper section, and `harness`, the one harness they share (`harness.Experiment`, the
descriptor each experiment module ends with, and the analysis helpers its notebook calls), and
`recovery`, the recovery trial readyboost and payoff both run.

`harness` and `recovery` are not experiments: the experiments are the blocks the schema names
(`pagelab.system.config.experiments()`), and the command line refuses any other name before it
imports `pagelab.experiments.<name>`.
"""
