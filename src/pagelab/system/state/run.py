"""The run scope: one owner changes paging state at a time (`exclusive`, the machine-wide lock);
`session` restores what a killed run left, yields a State whose changes are undone on exit,
also on SIGTERM, SIGHUP and SIGINT; `current` is the open session's State.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

from pagelab.system.state import lock
from pagelab.system.state.change import State
from pagelab.system.state.journal import Journal
from pagelab.system.state.signals import HELD_SIGNALS
from pagelab.system.state.undo import restore


@contextmanager
def exclusive(journal: Journal | None = None, wait: bool = True) -> Iterator[None]:
    """Hold the machine-wide state lock (lock.py) for this journal's run: one owner changes
    paging state at a time, whatever journal it uses. With wait=False a lock held by another
    owner is StateBusy naming its pid and command."""
    journal = journal or Journal()
    with lock.exclusive(journal.path, wait=wait):
        yield


@contextmanager
def session(journal: Journal | None = None) -> Iterator[State]:
    """Take the state lock, restore anything a crashed run left, yield a State, restore on
    exit (also on SIGTERM and SIGHUP, which are turned into exceptions so the restore runs)."""
    journal = journal or Journal()
    with exclusive(journal), lock.registered(journal.path):
        yield from _session(journal)


_CURRENT: State | None = None


def current() -> State | None:
    """The State of this process's open session, if any: for helpers that journal through it
    without being handed it (experiment.work_dir)."""
    return _CURRENT


def _session(journal: Journal) -> Iterator[State]:
    global _CURRENT
    # The first SIGTERM/SIGHUP/SIGINT becomes an exception (SystemExit 128 + signal), so the
    # restore below runs; while a change or an undo is under way, and during the restores here,
    # signals wait (State.held): later ones (a make killed as a process group sends one to every
    # process, Snakemake another) cannot cut an undo short and leave a loop device or a mount.
    st = State(journal)
    old = {s: signal.signal(s, st._on_signal) for s in HELD_SIGNALS}
    finished = False
    try:
        with st.held():
            restore(journal)  # what a killed run left
        st.run_group()
        _CURRENT = st
        yield st
        finished = True
    finally:
        _CURRENT = None
        try:
            with st.held():
                restore(journal)
        finally:
            for s, h in old.items():
                signal.signal(s, h)
        if st.signalled is not None and finished:  # its SystemExit was lost (stop_if_signalled)
            raise SystemExit(128 + st.signalled)
