"""The run layer: running trials (`trials`, `progress`), the native tools (`tools`), emulated
devices, the hogs and the victim, the Superfetch-like agent, trial records as a table (`tidy`),
recorded runs (`recording`) and the published values (`published`).
"""
