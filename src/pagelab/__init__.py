"""pagelab: the tested logic behind the paging-lab pipeline.

Snakemake rules and notebooks call into this package; nothing here runs at import time.
`pagelab.__version__` is computed when first read (pagelab.core.version: the release tag, or
pyproject.toml's version), the same value every native tool's `--version` prints.
"""

from pagelab.core import version as _version


def __getattr__(name: str) -> str:
    if name == "__version__":
        return _version.version()
    raise AttributeError(f"module 'pagelab' has no attribute {name!r}")
