"""Root's lock files are opened so that no other user can redirect them: the state lock
(pagelab.system.state.lock) and workflow/scripts/local_slurm.py's subnet lock share one open
(open_root_file): a directory only root can write to, the file opened without following a
symbolic link and never truncated. Each lock is pointed at a directory of the test's own: the
real /run/pagelab is never touched, and nothing here changes paging state."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pagelab.system.state import lock
from pagelab.system.state.kernel import StateError
from test_slurm import script_module

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="root's lock files: the checks want root's directory")


def planted(d: Path, name: str) -> tuple[Path, Path]:
    """A directory only root can write to, holding `name` as a symbolic link to a file of
    its own (what someone able to write there could plant): (the link, its target)."""
    d.mkdir(mode=0o755)
    target = d.parent / f"{d.name}-target"
    target.write_text("keep me\n")
    (d / name).symlink_to(target)
    return d / name, target


def test_the_state_lock_refuses_a_planted_symbolic_link(tmp_path, monkeypatch):
    """exclusive() on a lock path that is a symbolic link: StateError naming it, and the link's
    target is neither truncated nor written (O_NOFOLLOW: without it the holder's record would
    overwrite the target)."""
    link, target = planted(tmp_path / "run", "state.lock")
    monkeypatch.setattr(lock, "LOCK_PATH", link)
    with pytest.raises(StateError, match=r"cannot open the state lock .*state\.lock: a symbolic link; refusing"):
        with lock.exclusive():
            pytest.fail("the lock was taken through a symbolic link")
    assert target.read_text() == "keep me\n" and link.is_symlink()


@pytest.mark.parametrize("mode", [0o1777, 0o775])
def test_root_lock_in_a_directory_others_can_write_is_refused(tmp_path, monkeypatch, mode):
    """A lock directory writable by others (sticky, as /run/lock and /tmp are, or group-writable)
    is refused by the state lock and by local_slurm's, and nothing is made in it."""
    d = tmp_path / "open"
    d.mkdir()
    os.chmod(d, mode)
    monkeypatch.setattr(lock, "LOCK_PATH", d / "state.lock")
    with pytest.raises(StateError, match="is not a directory that only root can write to"):
        with lock.exclusive():
            pytest.fail("the lock was taken in a directory others can write to")
    mod = script_module()
    monkeypatch.setattr(mod, "NET_LOCK", d / "local-slurm.lock")
    with pytest.raises(mod.RefusedError, match="is not a directory that only root can write to"):
        mod.net_lock()
    assert list(d.iterdir()) == []


def test_local_slurm_start_refuses_a_planted_lock_link_before_anything(tmp_path, monkeypatch, capsys):
    """`local_slurm.py start DIR` with its subnet lock a symbolic link: one line naming the lock,
    exit 2, DIR not made and the link's target untouched. (ETC_SLURM is pointed at a missing
    path, so that a start past the lock would stop there, exit 1, and never start a daemon.)"""
    mod = script_module()
    link, target = planted(tmp_path / "run", "local-slurm.lock")
    monkeypatch.setattr(mod, "NET_LOCK", link)
    monkeypatch.setattr(mod, "ETC_SLURM", tmp_path / "no-etc-slurm")
    cluster = tmp_path / "cluster"
    assert mod.main(["start", str(cluster)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"the subnet lock {link}: a symbolic link; refusing" in err, err
    assert not os.path.lexists(cluster) and target.read_text() == "keep me\n" and link.is_symlink()


def test_local_slurm_lock_is_root_own_file_beside_the_state_lock_never_truncated(tmp_path, monkeypatch):
    """The subnet lock lives in the state lock's directory (root's, under /run), not in a
    world-writable one; opened, it is root's regular file, made when missing and never truncated
    (a lock holds no data, but an open that truncates would empty whatever it was pointed at)."""
    mod = script_module()
    assert mod.NET_LOCK.parent == lock.LOCK_PATH.parent
    d = tmp_path / "run"
    d.mkdir(mode=0o755)
    monkeypatch.setattr(mod, "NET_LOCK", d / "local-slurm.lock")
    fd = mod.net_lock()
    os.close(fd)
    st = os.lstat(d / "local-slurm.lock")
    assert stat.S_ISREG(st.st_mode) and st.st_uid == 0
    (d / "local-slurm.lock").write_text("left here\n")
    fd = mod.net_lock()
    try:
        assert os.fstat(fd).st_ino == st.st_ino
    finally:
        os.close(fd)
    assert (d / "local-slurm.lock").read_text() == "left here\n"
