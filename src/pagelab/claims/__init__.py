"""The claims layer: the published claims this repository reproduces, in one place: the registry
(`registry`: data/published/claims.csv read and checked, the paper's table of claims and its
macros), its changelog (`changelog`: data/published/claims_changelog.csv, checked against every
recording) and the verdicts on them (`judge`: the verdict table, the recorded runs' verdicts and
the verdict figure).
"""
