"""A throw-away single-node SLURM cluster on localhost, for tests that submit real jobs.

Debian's `slurm-wlm` and `munge` packages (installed with apt-get when missing); every daemon runs as root in
the foreground as a child of this process, with its state, logs, PID files and munge socket under one
temporary directory, and is stopped by its PID.

One thing has to live outside that directory: the slurm.conf. snakemake-executor-plugin-slurm strips every
`SLURM_*` variable but a few job ids from the environment of the `srun` it runs inside each job, `SLURM_CONF`
included, so that `srun` reads the default /etc/slurm/slurm.conf. The cluster writes its configuration there
and puts back what was there before (or removes it) when it stops.

    with SlurmCluster(tmp_path / "slurm") as cluster:
        subprocess.run(["sbatch", "-p", cluster.partition, "--wrap", "true"])
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

PACKAGES = ("slurm-wlm", "munge")
COMMANDS = ("munged", "slurmctld", "slurmd", "sinfo", "squeue", "sbatch", "srun", "scontrol", "scancel")
SLURM_CONF = Path("/etc/slurm/slurm.conf")
# Non-default ports, so a forgotten daemon of a real installation (6817/6818) is never talked to by mistake.
CTLD_PORT, SLURMD_PORT = 6917, 6918


def exe(name: str) -> str:
    """The command's path: the daemons live in /usr/sbin, which a non-login root shell may not have on PATH."""
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin") or name


def missing_commands() -> list[str]:
    return [c for c in COMMANDS if not Path(exe(c)).is_absolute()]


def ensure_installed(timeout: float = 900) -> str | None:
    """Install slurm-wlm and munge with apt-get if a command is missing; the reason they are unusable, or None."""
    if not missing_commands():
        return None
    if shutil.which("apt-get") is None:
        return f"SLURM is not installed ({', '.join(missing_commands())} missing) and there is no apt-get"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    log = []
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *PACKAGES]):
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"`{' '.join(cmd)}` did not finish in {timeout:.0f} s"
        log.append(p.stdout[-2000:] + p.stderr[-2000:])
        if p.returncode != 0:
            return f"`{' '.join(cmd)}` failed (exit {p.returncode}): {log[-1].strip()[-500:]}"
    if missing_commands():
        return f"apt-get installed {' '.join(PACKAGES)} but {', '.join(missing_commands())} are still missing"
    return None


def running_slurm_daemons() -> list[str]:
    """Names and PIDs of slurmctld/slurmd processes already running (a real installation we must not disturb)."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                comm = (d / "comm").read_text().strip()
            except OSError:
                continue
            if comm in ("slurmctld", "slurmd", "slurmdbd"):
                found.append(f"{comm} (pid {d.name})")
    return found


def node_line() -> str:
    """`NodeName=... CPUs=... RealMemory=...` for this machine, as `slurmd -C` measures it."""
    out = subprocess.run([exe("slurmd"), "-C"], capture_output=True, text=True, check=True, timeout=60).stdout
    line = next(x for x in out.splitlines() if x.startswith("NodeName="))
    return line.strip()


class SlurmCluster:
    """munged + slurmctld + slurmd on localhost, one partition holding this machine; a context manager."""

    def __init__(self, workdir: str | Path, partition: str = "ctbench", min_job_age: int = 600):
        self.dir = Path(workdir).resolve()
        self.partition = partition
        self.min_job_age = min_job_age
        self.procs: dict[str, subprocess.Popen] = {}
        self._conf_backup: Path | None = None
        self._conf_written = False
        self.node = ""

    # -- configuration ---------------------------------------------------------------------------------------
    @property
    def munge_socket(self) -> Path:
        return self.dir / "munge" / "munge.socket"

    def log(self, name: str) -> Path:
        return self.dir / "log" / f"{name}.log"

    def pid_file(self, name: str) -> Path:
        return self.dir / "run" / f"{name}.pid"

    def slurm_conf(self) -> str:
        line = node_line()
        self.node = re.match(r"NodeName=(\S+)", line).group(1)
        d = self.dir
        return "\n".join([
            "# Written by tests/integration/slurm_cluster.py for a single-node test cluster; removed afterwards.",
            "ClusterName=ctbench-test",
            "SlurmctldHost=localhost",
            f"SlurmctldPort={CTLD_PORT}",
            f"SlurmdPort={SLURMD_PORT}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={d / 'state'}",
            f"SlurmdSpoolDir={d / 'spool'}",
            f"SlurmctldPidFile={self.pid_file('slurmctld')}",
            f"SlurmdPidFile={self.pid_file('slurmd')}",
            f"SlurmctldLogFile={self.log('slurmctld')}",
            f"SlurmdLogFile={self.log('slurmd')}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            # no cgroups (containers rarely delegate them): processes tracked through /proc, no task binding
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            # no slurmdbd: no accounting, so `sacct` knows nothing and job status must come from squeue
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "MpiDefault=none",
            "ReturnToService=2",
            # finished jobs stay visible to `squeue --states=all` this long (the plugin wants >= 3x its poll interval)
            f"MinJobAge={self.min_job_age}",
            "SlurmctldTimeout=60",
            "SlurmdTimeout=60",
            "InactiveLimit=0",
            "KillWait=5",
            "Waittime=0",
            f"{line} NodeAddr=127.0.0.1 State=UNKNOWN",
            f"PartitionName={self.partition} Nodes={self.node} Default=YES MaxTime=INFINITE State=UP",
            "",
        ])

    # -- lifecycle ---------------------------------------------------------------------------------------------
    def start(self, timeout: float = 120) -> SlurmCluster:
        for sub in ("munge", "state", "spool", "log", "run"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        self.dir.chmod(0o700)  # munged refuses a socket or key directory that others may write to
        (self.dir / "munge").chmod(0o700)
        key = self.dir / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)

        conf = self.slurm_conf()
        SLURM_CONF.parent.mkdir(parents=True, exist_ok=True)
        if SLURM_CONF.exists():
            self._conf_backup = self.dir / "slurm.conf.orig"
            shutil.copy2(SLURM_CONF, self._conf_backup)
        self._conf_written = True
        SLURM_CONF.write_text(conf)
        (self.dir / "slurm.conf").write_text(conf)  # a copy that survives the restore, for debugging

        try:
            self._spawn("munged", ["munged", "--foreground", "--force", f"--socket={self.munge_socket}",
                                   f"--key-file={key}", f"--pid-file={self.pid_file('munged')}",
                                   f"--log-file={self.log('munged')}", f"--seed-file={self.dir / 'munge' / 'seed'}"])
            self._wait(lambda: self.munge_socket.exists(), 30, "munged did not create its socket")
            self._spawn("slurmctld", ["slurmctld", "-D", "-i"])
            self._wait(lambda: self._run(["scontrol", "ping"]).stdout.count("UP") > 0, 60,
                       "slurmctld does not answer `scontrol ping`")
            self._spawn("slurmd", ["slurmd", "-D", "-N", self.node])
            self._wait(self._node_idle, timeout, f"node {self.node} is not idle in `sinfo`")
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, name: str, cmd: list[str]) -> None:
        out = open(self.dir / "log" / f"{name}.stdout", "w")
        self.procs[name] = subprocess.Popen([exe(cmd[0]), *cmd[1:]], stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        out.close()

    def _run(self, cmd: list[str], timeout: float = 30) -> subprocess.CompletedProcess:
        try:
            return subprocess.run([exe(cmd[0]), *cmd[1:]], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            return subprocess.CompletedProcess(cmd, 124, e.stdout or "", e.stderr or "")

    def _node_idle(self) -> bool:
        out = self._run(["sinfo", "-h", "-N", "-p", self.partition, "-o", "%N %t"]).stdout.split()
        return out[:2] == [self.node, "idle"]

    def _wait(self, ready, timeout: float, message: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [n for n, p in self.procs.items() if p.poll() is not None]
            if dead:
                raise RuntimeError(f"{', '.join(dead)} exited early\n{self.diagnostics()}")
            if ready():
                return
            time.sleep(0.5)
        raise RuntimeError(f"{message} after {timeout:.0f} s\n{self.diagnostics()}")

    def diagnostics(self, tail: int = 3000) -> str:
        parts = []
        for f in sorted((self.dir / "log").glob("*")):
            if f.suffix == ".stdout" and f.with_suffix(".log").exists() and f.with_suffix(".log").stat().st_size:
                continue  # a daemon in the foreground writes its log file and stdout alike
            text = f.read_text(errors="replace")
            if text.strip():
                parts.append(f"--- {f.name}\n{text[-tail:]}")
        return "\n".join(parts)

    def stop(self) -> None:
        """Cancel what is left in the queue, stop the daemons by PID (slurmd, slurmctld, munged), restore the conf."""
        try:
            if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
                self._run(["scancel", "--partition", self.partition], timeout=30)
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and self._run(["squeue", "-h", "-t", "R,CG"]).stdout.strip():
                    time.sleep(1)
            for name in ("slurmd", "slurmctld", "munged"):
                p = self.procs.get(name)
                if p is None or p.poll() is not None:
                    continue
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=30)
        finally:
            self.procs.clear()
            if self._conf_written:
                if self._conf_backup is not None:
                    shutil.copy2(self._conf_backup, SLURM_CONF)
                else:
                    SLURM_CONF.unlink(missing_ok=True)
                self._conf_written = False

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
