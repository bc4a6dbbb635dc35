"""The core layer: libraries that touch nothing on the machine (paths, sizes, records on disk,
LaTeX text, statistics, fits, prose from estimates, figures, the notebook from its template).
"""

import importlib.util
import sys
from types import ModuleType


def _lazy(name: str) -> ModuleType:
    """The module `name`, registered now and executed at its first attribute access
    (importlib.util.LazyLoader): `import name` and `from ... import name` then cost nothing. A
    module already imported is returned as it is."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.loader is not None, name
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# The figures (matplotlib and seaborn, about 1 s of imports) load when something first draws:
# `pagelab trial`, which imports every experiment module for its trial and draws nothing, and the
# other commands start without them.
plots = _lazy(f"{__name__}.plots")
