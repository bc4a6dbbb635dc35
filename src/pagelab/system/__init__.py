"""The system layer: what changes the machine, journaled (`state`), what reads it (`counters`,
`mm`), what the machine is (`provenance`) and the configuration checked against it (`config`).
"""
