"""The run layer: running trials (`trials`, `progress`), the native tools (`tools`), emulated
devices, the hogs and the victim, the Superfetch-like agent, the verdict stopping rule
(`sequential`), where a run's time went (`timing`), and the fleet: its jobs and one job on a host
(`fleet`) and their plan from recorded durations (`fleetplan`).
"""
