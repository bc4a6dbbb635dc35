#!/usr/bin/env python3
"""A Slurm cluster of a few nodes on this one machine, from Debian's packages, for the fleet's
tests and for trying the fleet (docs/slurm.md).

  local_slurm.py start DIR [--nodes N]   write DIR/slurm.conf, start munged, slurmctld and one
                                         slurmd per node, wait until every node is idle
  local_slurm.py stop DIR [--remove]     cancel the jobs, stop every daemon, leave nothing behind
                                         (--remove: and remove DIR, when start made it)
  local_slurm.py env DIR                 `export SLURM_CONF=...`, for `eval` in a shell
  local_slurm.py check                   exit 0 when the packages are installed and this is root

Each node is a real slurmd in network and UTS namespaces of its own: its own hostname (the node
name) and its own address, joined to this machine by a veth pair (10.77.X.n, point to point, with
the controller at 10.77.X.1 on every pair). The mount namespace is shared: the file system is the
cluster's shared file system, as NFS is on a real one. Namespaces and veth pairs belong to the
processes in them, so they are gone when the daemons (and any job they ran) have ended; nothing
is written outside DIR but the veth pairs while they live and the lock that one start at a time
chooses a subnet under, /run/pagelab/local-slurm.lock: root's file in a directory only root can
write to, opened without following a symbolic link (pagelab.system.state.lock.open_root_file,
the state lock's own open); a planted link or a directory open to others is refused by `start`
before anything is made, one line, exit 2.

Everything runs as root (the experiments change paging state); the daemons are munged (own key
and socket in DIR), slurmctld and slurmd. No slurmdbd: the Snakemake slurm executor asks
`squeue` for its jobs' states (workflow/profiles/slurm: slurm-status-command), which needs only
that finished jobs stay known for MinJobAge (MIN_JOB_AGE_S here); finished jobs are also written
to DIR/jobcomp.txt (jobcomp/filetxt: id, node, start and end of each job).

Each daemon is stopped by its pid, read from its own pid file and accepted only when its command
line names DIR, then every process left in a node's namespaces (a job's) by pid.

DIR is removed (by `start`, which starts afresh, and by `stop --remove`) only when this script
made it: a real directory, not a symbolic link, owned by this user, holding the marker file
DIR/.local-slurm that `start` wrote (checked with lstat: a regular file owned by this user).
`start` makes DIR itself and refuses one that exists without the marker; `/`, $HOME, the
repository and their parents are refused whatever they hold. A refusal is one line, exit 2.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from stat import S_ISDIR, S_ISLNK, S_ISREG

# Root's lock file is opened by the package's own checked open, which needs only the standard
# library: run as `python3 workflow/scripts/local_slurm.py`, outside the venv, the script finds
# the package in its checkout's src/.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
from pagelab.system.state.kernel import StateError  # noqa: E402
from pagelab.system.state.lock import open_root_file  # noqa: E402

PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
COMMANDS = {"munged": "munge", "slurmctld": "slurmctld", "slurmd": "slurmd", "sbatch": "slurm-client",
            "squeue": "slurm-client", "scontrol": "slurm-client", "sinfo": "slurm-client",
            "scancel": "slurm-client", "unshare": "util-linux", "nsenter": "util-linux", "ip": "iproute2"}
NET = "10.77"                          # nodes are 10.77.X.2..; the controller is 10.77.X.1
IF_PREFIX = "pls"                      # veth names: pls<X>n<i> (this machine's end)
# One start chooses a subnet at a time. Root's lock, so never in a directory others can write
# (/run/lock is world-writable: a link planted there would be followed): beside the state lock.
NET_LOCK = Path("/run/pagelab/local-slurm.lock")
# How long squeue keeps a finished job (Slurm's MinJobAge; 300 s by default). Without accounting,
# squeue is the only record of a job's state, node, start and end: tests/test_slurm.py reads the
# first run's jobs after four more runs, which on a loaded machine take longer than 300 s. An
# hour outlasts that test at its every timeout (its test_min_job_age_outlasts_the_fleet_runs);
# the plugin keeps squeue as long as MinJobAge is at least three first status-check delays.
MIN_JOB_AGE_S = 3600
# Slurm's AuthInfo cred_expire (120 s by default, 5 at least): the lifetime of a job's launch
# credential, and how long a job requeued after its node failed (the plugin's slurm-requeue) waits
# before it may start again (its BeginTime: the requeue plus this, plus 1 s). Short here, so that
# such a job runs again within a run of tests/test_slurm.py; a launch on this one machine takes
# far less.
CRED_EXPIRE_S = 5
SLURMD_PORT = 6818                     # each slurmd is alone in its namespace: the same port for all
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
SOCKET_MAX = 107                       # sun_path
# Where Slurm's commands look for slurm.conf without SLURM_CONF (Debian's build). Inside a job the
# Snakemake jobstep executor runs srun with every SLURM_* variable but the job's identity removed,
# SLURM_CONF too; so each node has DIR/etc bound over /etc/slurm in a mount namespace of its own
# (a slave of this machine's: mounts made here show there, none made there shows here), as a
# real node has its slurm.conf in /etc/slurm.
ETC_SLURM = Path("/etc/slurm")
MARKER = ".local-slurm"                # DIR/.local-slurm: this script made DIR (its removal needs it)
MARKER_TEXT = "a local Slurm cluster's directory, made by workflow/scripts/local_slurm.py\n"
REPO = Path(__file__).resolve().parents[2]


class LocalSlurmError(RuntimeError):
    pass


class RefusedError(LocalSlurmError):
    """DIR is not one this script may use or remove: exit 2, nothing changed."""


# ------------------------------------------------------------------------------------ helpers
def missing() -> list[str]:
    """The Debian packages whose commands are not on PATH."""
    return sorted({pkg for cmd, pkg in COMMANDS.items() if shutil.which(cmd) is None})


def run(cmd: list[str], check: bool = True, env: dict[str, str] | None = None, timeout: float = 30) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if check and out.returncode != 0:
        raise LocalSlurmError(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()}")
    return out.stdout


def poll(done, seconds: float, step: float = 0.1) -> bool:
    end = time.monotonic() + seconds
    while True:
        if done():
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(step)


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def stat(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name: state, ppid, ...; [] when there is no such process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def alive(pid: int) -> bool:
    """Running and not a zombie."""
    st = stat(pid)
    return bool(st) and st[0] != "Z"


def starttime(pid: int) -> int | None:
    st = stat(pid)
    return int(st[19]) if len(st) > 19 else None


def children(pid: int) -> list[int]:
    return [int(p.name) for p in Path("/proc").glob("[0-9]*") if stat(int(p.name))[1:2] == [str(pid)]]


def reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def netns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def link_names() -> set[str]:
    names = set()
    for line in run(["ip", "-o", "link", "show"], check=False).splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            names.add(parts[1].strip().split("@")[0])
    return names


def used_subnets() -> set[int]:
    """Third octets of 10.77.X.* that an address, a route or a veth of another local cluster
    on this machine uses already."""
    used = set()
    text = run(["ip", "-o", "addr", "show"]) + run(["ip", "-o", "route", "show", "table", "all"])
    for word in text.replace("/", " ").split():
        parts = word.split(".")
        if len(parts) == 4 and ".".join(parts[:2]) == NET and parts[2].isdigit():
            used.add(int(parts[2]))
    for name in link_names():
        head = name[len(IF_PREFIX):].split("n")[0] if name.startswith(IF_PREFIX) else ""
        if head.isdigit():
            used.add(int(head))
    return used


def real_memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024 - 512  # leave the kernel some, as slurmd -C would
    raise LocalSlurmError("no MemTotal in /proc/meminfo")


# ------------------------------------------------------------------------------------ layout
class Cluster:
    def __init__(self, root: Path):
        self.root = Path(os.path.abspath(root))   # not resolve(): a symbolic link is refused, never followed
        self.etc = self.root / "etc"          # a node's /etc/slurm (a bind mount in its namespace)
        self.conf = self.etc / "slurm.conf"
        self.munge = self.root / "munge"
        self.socket = self.munge / "munge.socket"
        self.ctld = self.root / "ctld"
        self.info_path = self.root / "cluster.json"

    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def info(self) -> dict:
        try:
            return json.loads(self.info_path.read_text())
        except (OSError, ValueError):
            return {}

    def node_dir(self, name: str) -> Path:
        return self.root / "nodes" / name

    def pids(self) -> list[tuple[str, int]]:
        """(daemon, pid) of every daemon this cluster started, from the daemons' own pid files
        and the node pids start recorded; only pids whose command line names this cluster's
        directory (a pid file may be stale and its pid someone else's now)."""
        found = []
        files = [("munged", self.munge / "munged.pid"), ("slurmctld", self.ctld / "slurmctld.pid")]
        files += [(f"slurmd {p.parent.name}", p) for p in sorted((self.root / "nodes").glob("*/slurmd.pid"))]
        for name, path in files:
            try:
                found.append((name, int(path.read_text().split()[0])))
            except (OSError, ValueError, IndexError):
                continue
        for node in self.info().get("nodes", []):
            found.append((f"slurmd {node['name']}", node["pid"]))
        out, seen = [], set()
        for name, pid in found:
            if pid not in seen and str(self.root) in cmdline(pid):
                seen.add(pid)
                out.append((name, pid))
        # slurmctld's own helper (slurmscriptd), whose command line names nothing: by its start time
        out += [(h["name"], h["pid"]) for h in self.info().get("helpers", [])
                if h["pid"] not in seen and starttime(h["pid"]) == h["starttime"]]
        return out

    def namespaced(self) -> list[int]:
        """Every process in one of this cluster's node network namespaces (slurmd, and the
        slurmstepd and job processes it started)."""
        spaces = {n["netns"] for n in self.info().get("nodes", []) if n.get("netns")}
        if not spaces:
            return []
        return [int(p.name) for p in Path("/proc").glob("[0-9]*") if netns(int(p.name)) in spaces]


# ------------------------------------------------------------------------------------ DIR
def protected() -> list[Path]:
    """Paths whose removal would take more than a cluster: /, $HOME, the repository (each as
    given and resolved)."""
    out = [Path("/"), REPO]
    if os.environ.get("HOME"):
        out.append(Path(os.path.abspath(os.environ["HOME"])))
    return out + [p.resolve() for p in out]


def check_dir(root: Path, must_exist: bool = True) -> bool:
    """Whether `root` is a cluster directory this script made (False: it does not exist, and
    `must_exist` is False); raises RefusedError, naming the reason, for anything else."""
    for p in protected():
        if root == p or p.is_relative_to(root):
            raise RefusedError(f"local_slurm: {root}: refusing it: it is or holds {p} "
                               "(give the cluster a directory of its own)")
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        if must_exist:
            raise RefusedError(f"local_slurm: {root}: no such directory") from None
        return False
    if S_ISLNK(st.st_mode):
        raise RefusedError(f"local_slurm: {root}: a symbolic link; refusing to follow it")
    if not S_ISDIR(st.st_mode):
        raise RefusedError(f"local_slurm: {root}: not a directory")
    if st.st_uid != os.geteuid():
        raise RefusedError(f"local_slurm: {root}: owned by uid {st.st_uid}, not by this user; not made here")
    try:
        mk = os.lstat(root / MARKER)
    except FileNotFoundError:
        raise RefusedError(f"local_slurm: {root}: no {MARKER} marker, so not a directory local_slurm.py made; "
                           "refusing to use or remove it") from None
    if not S_ISREG(mk.st_mode) or mk.st_uid != os.geteuid():
        raise RefusedError(f"local_slurm: {root / MARKER}: not a regular file of this user; refusing")
    fd = os.open(root / MARKER, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd) as fh:
        if fh.read() != MARKER_TEXT:
            raise RefusedError(f"local_slurm: {root / MARKER}: not the marker local_slurm.py writes; refusing")
    return True


def make_dir(root: Path) -> None:
    """Make `root` (its parents as needed) and write the marker in it; `root` must not exist."""
    root.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(root, 0o755)
    except FileExistsError:    # something appeared there since the check: never reused
        raise RefusedError(f"local_slurm: {root}: appeared while the cluster was being set up; refusing it") from None
    os.chmod(root, 0o755)
    fd = os.open(root / MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as fh:
        fh.write(MARKER_TEXT)


def remove_dir(root: Path) -> bool:
    """Remove a cluster directory this script made (check_dir first); False when there is none.
    shutil.rmtree follows no symbolic link inside it."""
    if not check_dir(root, must_exist=False):
        return False
    shutil.rmtree(root)
    return True


def net_lock() -> int:
    """An fd on the subnet lock NET_LOCK (not yet locked), opened by open_root_file: RefusedError
    when it is a symbolic link, not root's regular file, or in a directory others can write to."""
    try:
        return open_root_file(NET_LOCK, "the subnet lock")
    except StateError as exc:
        raise RefusedError(f"local_slurm: {exc}") from None


# ------------------------------------------------------------------------------------ config
def slurm_conf(c: Cluster, nodes: list[dict], ctl_addr: str, ctl_port: int) -> str:
    host = socket.gethostname().split(".")[0]
    cpus = os.cpu_count() or 1
    mem = real_memory_mb()
    lines = [
        "# Written by workflow/scripts/local_slurm.py: a Slurm cluster on this one machine.",
        "ClusterName=pagelab",
        f"SlurmctldHost={host}({ctl_addr})",
        f"SlurmctldPort={ctl_port}",
        f"SlurmdPort={SLURMD_PORT}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={c.socket},cred_expire={CRED_EXPIRE_S}",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={c.ctld}",
        f"SlurmctldPidFile={c.ctld}/slurmctld.pid",
        f"SlurmctldLogFile={c.ctld}/slurmctld.log",
        f"SlurmdSpoolDir={c.root}/nodes/%n",
        f"SlurmdPidFile={c.root}/nodes/%n/slurmd.pid",
        f"SlurmdLogFile={c.root}/nodes/%n/slurmd.log",
        f"PlugStackConfig={c.etc}/plugstack.conf",
        "ProctrackType=proctrack/linuxproc",   # no cgroups: the experiments make their own
        "TaskPlugin=task/none",
        "MpiDefault=none",
        "SchedulerType=sched/backfill",
        "SchedulerParameters=sched_interval=1",   # a requeued job starts once its BeginTime has come
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/none",
        "JobCompType=jobcomp/filetxt",
        f"JobCompLoc={c.root}/jobcomp.txt",
        f"MinJobAge={MIN_JOB_AGE_S}",          # squeue knows a finished job this long
        "ReturnToService=1",                   # a node set DOWN stays down until resumed
        "SlurmdTimeout=60",
        "KillWait=10",
        "InactiveLimit=0",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
    ]
    for n in nodes:
        lines.append(f"NodeName={n['name']} NodeAddr={n['addr']} CPUs={cpus} RealMemory={mem} State=UNKNOWN")
    lines.append("PartitionName=fleet Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------ start
def start(c: Cluster, n_nodes: int) -> dict:
    if not 1 <= n_nodes <= 200:
        raise RefusedError(f"local_slurm: --nodes {n_nodes}: between 1 and 200")
    ours = check_dir(c.root, must_exist=False)   # before anything: refuses a DIR not made here
    if len(str(c.socket)) > SOCKET_MAX:
        raise RefusedError(f"local_slurm: {c.root}: too long a path for munged's socket "
                           f"({len(str(c.socket))} > {SOCKET_MAX} characters)")
    if os.geteuid() != 0:
        raise LocalSlurmError("local_slurm: must run as root (slurmd, network namespaces)")
    lock = net_lock()    # checked before anything is stopped, removed or made
    try:
        lacking = missing()
        if lacking:
            raise LocalSlurmError(f"local_slurm: missing Debian packages: {' '.join(lacking)} "
                                  "(workflow/scripts/setup_system.sh installs them)")
        if not ETC_SLURM.is_dir():
            raise LocalSlurmError(f"local_slurm: {ETC_SLURM} does not exist (Debian's slurm packages make it)")
        return _make_and_start(c, n_nodes, lock, ours)
    finally:
        os.close(lock)


def _make_and_start(c: Cluster, n_nodes: int, lock: int, ours: bool) -> dict:
    if ours and (c.pids() or c.namespaced()):
        stop(c)   # what a run killed before its stop left behind
    remove_dir(c.root)
    make_dir(c.root)
    for d, mode in ((c.munge, 0o755), (c.ctld, 0o700), (c.etc, 0o755)):  # munged: its socket's
        d.mkdir(parents=True, exist_ok=True)                             # directory searchable by all
        os.chmod(d, mode)
    (c.etc / "plugstack.conf").write_text("")
    names = [f"node{i + 1}" for i in range(n_nodes)]
    for name in names:
        c.node_dir(name).mkdir(parents=True)
    try:
        info = _start(c, names, lock)
    except BaseException:
        stop(c)
        raise
    return info


def _start(c: Cluster, names: list[str], lock: int) -> dict:
    # munge: its own key and socket
    fd = os.open(c.munge / "munge.key", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    os.write(fd, os.urandom(1024))
    os.close(fd)
    run(["munged", f"--socket={c.socket}", f"--key-file={c.munge / 'munge.key'}",
         f"--pid-file={c.munge / 'munged.pid'}", f"--log-file={c.munge / 'munged.log'}",
         f"--seed-file={c.munge / 'munged.seed'}", "--num-threads=4"])
    if not poll(c.socket.exists, 10):
        raise LocalSlurmError(f"munged did not create {c.socket}: {tail(c.munge / 'munged.log')}")

    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        used = used_subnets()
        free = [x for x in range(10, 250) if x not in used]
        if not free:
            raise LocalSlurmError(f"local_slurm: no free subnet in {NET}.0.0/16")
        x = free[0]
        ctl_addr = f"{NET}.{x}.1"
        nodes = []
        for i, name in enumerate(names):
            nodes.append(_node(c, name, f"{NET}.{x}.{i + 2}", ctl_addr, f"{IF_PREFIX}{x}n{i + 1}"))
            _save(c, {"subnet": f"{NET}.{x}.0/24", "controller": ctl_addr, "nodes": nodes})
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)   # the veth pairs now hold the subnet (used_subnets)
    ctl_port = free_port()
    write_atomic(c.conf, slurm_conf(c, nodes, ctl_addr, ctl_port))
    info = {"subnet": f"{NET}.{x}.0/24", "controller": ctl_addr, "port": ctl_port, "nodes": nodes,
            "conf": str(c.conf)}
    _save(c, info)

    run(["slurmctld", "-c", "-f", str(c.conf)], env=c.env())
    for n in nodes:
        (c.node_dir(n["name"]) / "go").touch()   # the node's shell now execs slurmd

    def idle() -> bool:
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], capture_output=True, text=True,
                             env=c.env(), timeout=30)
        states = dict(ln.split() for ln in out.stdout.splitlines() if len(ln.split()) == 2)
        return out.returncode == 0 and all(states.get(n["name"]) == "idle" for n in nodes)

    if not poll(idle, READY_TIMEOUT_S, 0.2):
        logs = "; ".join(f"{p.parent.name}: {tail(p)}" for p in
                         [c.ctld / "slurmctld.log", *[c.node_dir(n["name"]) / "slurmd.log" for n in nodes]])
        state = run(["sinfo", "-h", "-N", "-o", "%N %T"], check=False, env=c.env())
        raise LocalSlurmError(f"local_slurm: nodes not idle after {READY_TIMEOUT_S:.0f} s "
                              f"({' '.join(state.split())}); {logs}")
    ctld = [pid for name, pid in c.pids() if name == "slurmctld"]
    info["helpers"] = [{"name": "slurmscriptd", "pid": k, "starttime": starttime(k)} for pid in ctld
                       for k in children(pid)]
    _save(c, info)
    return info


def _save(c: Cluster, info: dict) -> None:
    write_atomic(c.info_path, json.dumps(info, indent=1) + "\n")


def _node(c: Cluster, name: str, addr: str, ctl_addr: str, ifname: str) -> dict:
    """A network and UTS namespace whose shell waits for DIR/nodes/<name>/go, then becomes
    slurmd; a veth pair joins it to this machine."""
    d = c.node_dir(name)
    script = ('hostname "$1" && ip link set lo up && mount --bind "$4" "$5" || exit 1; '
              'while [ ! -e "$2/go" ]; do sleep 0.05; done; '
              'exec slurmd -D -N "$1" -f "$3" -L "$2/slurmd.log"')
    with open(d / "node.out", "wb") as out:
        proc = subprocess.Popen(["unshare", "--net", "--uts", "--mount", "--propagation", "slave", "--",
                                 "sh", "-c", script, "node", name, str(d), str(c.conf), str(c.etc), str(ETC_SLURM)],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    mine = netns(os.getpid())
    if not poll(lambda: netns(proc.pid) not in (None, mine) or proc.poll() is not None, 10, 0.01) \
            or proc.poll() is not None:
        raise LocalSlurmError(f"local_slurm: {name}: unshare failed: {tail(d / 'node.out')}")
    node = {"name": name, "addr": addr, "pid": proc.pid, "netns": netns(proc.pid), "veth": ifname}
    run(["ip", "link", "add", ifname, "type", "veth", "peer", "name", "eth0", "netns", str(proc.pid)])
    run(["ip", "addr", "add", ctl_addr, "peer", addr, "dev", ifname])
    run(["ip", "link", "set", ifname, "up"])
    inside = ["nsenter", "-t", str(proc.pid), "-n"]
    run([*inside, "ip", "addr", "add", addr, "peer", ctl_addr, "dev", "eth0"])
    run([*inside, "ip", "link", "set", "eth0", "up"])
    return node


def tail(path: Path, n: int = 3) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return f"(no {path.name})"
    return " | ".join(lines[-n:]) or f"({path.name} is empty)"


# ------------------------------------------------------------------------------------ stop
def stop(c: Cluster) -> list[str]:
    """Cancel every job, stop the daemons (slurmd, slurmctld, munged: by pid, TERM then KILL),
    then any process still in a node's namespaces. Returns what was stopped; raises when
    something is still running afterwards."""
    stopped = []
    ctld = [p for n, p in c.pids() if n == "slurmctld"]
    if ctld and c.conf.exists():
        jobs = run(["squeue", "-h", "-o", "%i"], check=False, env=c.env()).split()
        if jobs:
            run(["scancel", *jobs], check=False, env=c.env())
            poll(lambda: not run(["squeue", "-h", "-t", "RUNNING,COMPLETING", "-o", "%i"], check=False,
                                 env=c.env()).split(), 15, 0.2)
            stopped.append(f"jobs {' '.join(jobs)}")
    order = sorted(c.pids(), key=lambda np: (0 if np[0].startswith("slurmd") else 1 if np[0] == "slurmctld" else 2))
    for name, pid in order:
        if _end(pid):
            stopped.append(f"{name} ({pid})")
    for pid in c.namespaced():   # job processes a cancelled job's slurmstepd left
        if _end(pid, grace=2):
            stopped.append(f"job process {pid}")
    left = [f"{n} ({p})" for n, p in c.pids() if alive(p)] + [str(p) for p in c.namespaced() if alive(p)]
    veths = {n["veth"] for n in c.info().get("nodes", [])}
    if not poll(lambda: not veths & link_names(), 10, 0.1):   # a veth goes with its namespace
        left += sorted(veths & link_names())
    if left:
        raise LocalSlurmError(f"local_slurm: still running after stop: {', '.join(left)}")
    for p in (c.munge / "munge.key",):
        p.unlink(missing_ok=True)
    return stopped


def _end(pid: int, grace: float = STOP_TIMEOUT_S / 3) -> bool:
    """TERM, then KILL after `grace` seconds; False when it had ended already."""
    if not alive(pid):
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False

    def gone() -> bool:
        reap(pid)
        return not alive(pid)

    if not poll(gone, grace, 0.05):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return True
        poll(gone, 5, 0.05)
    return True


# ------------------------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="local_slurm.py", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("start", help="start a local cluster in DIR")
    s.add_argument("dir", type=Path)
    s.add_argument("--nodes", type=int, default=3)
    t = sub.add_parser("stop", help="stop the cluster in DIR")
    t.add_argument("dir", type=Path)
    t.add_argument("--remove", action="store_true", help="also remove DIR")
    e = sub.add_parser("env", help="print `export SLURM_CONF=...`")
    e.add_argument("dir", type=Path)
    sub.add_parser("check", help="exit 0 when the packages are installed and this is root")
    args = p.parse_args(argv)
    try:
        if args.command == "check":
            lacking = missing()
            if lacking:
                print(f"local_slurm: missing Debian packages: {' '.join(lacking)}", file=sys.stderr)
                return 1
            if os.geteuid() != 0:
                print("local_slurm: must run as root", file=sys.stderr)
                return 1
            return 0
        c = Cluster(args.dir)
        if args.command == "stop" and not check_dir(c.root, must_exist=False):
            return 0   # nothing here: nothing to stop
        if args.command == "start":
            info = start(c, args.nodes)
            print(json.dumps(info, indent=1))
            return 0
        if args.command == "stop":
            for what in stop(c):
                print(f"local_slurm: stopped {what}")
            if args.remove:
                remove_dir(c.root)
            return 0
        if not c.conf.exists():
            print(f"local_slurm: {c.conf}: no cluster here (start one first)", file=sys.stderr)
            return 2
        print(f"export SLURM_CONF={c.conf}")
        return 0
    except RefusedError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except LocalSlurmError as exc:
        print(str(exc), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
