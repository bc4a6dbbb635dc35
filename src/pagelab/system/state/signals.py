"""Signals while the state changes: SIGTERM, SIGHUP and SIGINT wait while a change or an undo is
under way (`SignalHold.held`), so that no signal cuts a change from its journal line or an undo
short; the first of them then stops the run (SystemExit 128 + signal), which the run scope
(run.py) turns into a restore.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

HELD_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)  # wait while a change or an undo runs


class SignalHold:
    """The signal side of a `State`: `session` installs `_on_signal` for HELD_SIGNALS."""

    def __init__(self) -> None:
        self.signalled: int | None = None  # the signal `session` turned into SystemExit
        self._holding = 0                  # > 0 while a change or an undo runs (see `held`)
        self._deferred: list[int] = []     # signals that came meanwhile

    def stop_if_signalled(self) -> None:
        """Raise the SystemExit a SIGTERM or SIGHUP asked for once more. The handler raises it
        wherever the program is; inside a __del__ (a dropped Popen's, say) Python prints it and
        carries on, and the run would go on to its end. Called before each trial, so such a run
        stops there."""
        if self.signalled is not None:
            raise SystemExit(128 + self.signalled)

    @contextmanager
    def held(self) -> Iterator[None]:
        """A stretch that a signal must not cut in two (a change and its journal line, an undo):
        the session's handler keeps SIGTERM, SIGHUP and SIGINT that come meanwhile, and the
        first of them stops the run once the stretch is over."""
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1
        if not self._holding and self._deferred and self.signalled is None:
            self.signalled = self._deferred[0]
            raise SystemExit(128 + self.signalled)

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.signalled is not None or self._holding:
            self._deferred.append(signum)
            return
        self.signalled = signum
        raise SystemExit(128 + signum)
