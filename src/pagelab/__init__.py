"""pagelab: the tested logic behind the paging-lab pipeline.

Snakemake rules and notebooks call into this package; nothing here runs at import time.
"""

__version__ = "0.1.0"
