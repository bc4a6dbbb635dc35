"""The core layer: libraries that touch nothing on the machine (paths, sizes, records on disk,
LaTeX text, statistics, fits, prose from estimates, figures, the notebook from its template).
"""
