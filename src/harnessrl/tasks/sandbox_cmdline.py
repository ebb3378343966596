"""The command line that confines one sandboxed command (sandbox.py runs it).

The chain, outermost first (the facts are in HARNESSES.md, "Sandbox without Docker"):

    [sh -c 'echo 0 > <episode cgroup>/tasks ...; exec "$@"']             cgroup.py, when root
    [nsenter --mount=<private mount namespace holding the python tree>   staging.py, if needed
             --setuid=<ws uid> --setgid=<ws uid>]                        (drops root as well)
    [setpriv --reuid=<ws uid> --regid=<ws uid> --clear-groups]          root, nothing staged
    bwrap --unshare-all --unshare-user --disable-userns --cap-drop ALL --die-with-parent
          --new-session --clearenv --as-pid-1 --seccomp <fd> --ro-bind /usr /etc <python>
          --bind <scratch>/cmd-N/tmp /tmp --bind <ws> /app --proc --dev --remount-ro /  ...
          bash -c 'ulimit -t -v -u -f -n -c ...; eval "$1"' bash <command>    limits, then the command

- As root, bwrap would keep every capability inside its namespace (enough to remount a
  read-only bind writable) and the kernel ignores RLIMIT_NPROC for uid 0; so we drop all
  capabilities and run as the workspace's own unprivileged uid (one per workspace, see
  workspace.py). `/root` is 0700, so a Python tree under it is bind-mounted onto a staging
  dir inside a private mount namespace, where the unprivileged bwrap can read it; one helper
  process per workspace holds that namespace and each command joins it with nsenter. nsenter
  then also drops to the workspace uid (`setgroups(0)`, `setgid`, `setuid`: the same
  credentials as setpriv, no capabilities left), which saves one exec per command; setpriv does
  it when nothing is staged.
- Every process runs under the seccomp filter of seccomp.py (ptrace, pidfd_getfd, io_uring,
  bpf, keyrings, mounts, new namespaces ... refused) and, when root, in the episode's cgroup
  (cgroup.py): the memory and task count of all its processes together are bounded, and
  grading kills the whole episode at once. /tmp and /dev/shm are fresh dirs on the episode's
  size- and inode-capped scratch tmpfs (workspace.py). docs/security.md has the threat model.
- `--as-pid-1` with a shell as pid 1 (bash running the command through `eval`, so it cannot
  exec itself away, or `sh -c '"$@"; exit $?'` for argv commands): bwrap's own reaper would
  be orphaned to the host's init when bwrap exits, and an init that reaps lazily leaves
  zombies counted against the uid's NPROC. The shell waits for the command; when it exits the
  kernel kills everything left in the pid namespace (a `cmd &` left behind dies with the call).
  A timed-out sandbox is killed through its pid 1, so bwrap reaps it and nothing is orphaned.
- No network: only a loopback device in a fresh network namespace; or, with an episode network
  (netns.py), the episode's loopback-only namespace, entered by the same nsenter that drops
  root (`--net=`), with bwrap's `--share-net`.
- Hidden paths (the package's built-in suites, which hold hidden tests, and anything the
  caller adds) get an empty read-only tmpfs on top if they lie inside a bound tree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harnessrl.tasks.process import Limits
from harnessrl.tasks.workspace import APP, Workspace


@dataclass(frozen=True)
class Bind:
    """An extra host path made visible inside the sandbox. The source must be reachable by the
    workspace's uid (bwrap runs as that uid): use `Workspace.private_dir(name)` for scratch dirs."""

    source: Path
    target: str
    writable: bool = False


# The per-call fds go right after `--as-pid-1`.
_BWRAP_FIXED = [
    "--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
    "--die-with-parent", "--new-session", "--clearenv", "--as-pid-1",
]
_BWRAP_SYSTEM = [
    "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
    "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--ro-bind", "/etc", "/etc",
]


def bwrap_args(bwrap: str, ws: Workspace, limits: Limits, ro_paths: Sequence[Path], hidden: Sequence[Path],
               staged: Mapping[Path, Path], binds: Sequence[Bind], env: Mapping[str, str], cwd: str,
               call_dir: Path | None, fds: Sequence[str] = (), share_net: bool = False) -> list[str]:
    """The bwrap command line up to (not including) `--`. `staged` maps a read-only tree to the
    staging dir it is seen through; `fds` (`--seccomp N`, `--json-status-fd N`) go right after
    `--as-pid-1`. Which paths exist is checked on every call: a hidden path that appears later
    must still be covered. `share_net`: keep the network namespace bwrap starts in (the episode's,
    entered by `drop_root`) instead of a new empty one."""
    a = [bwrap, *_BWRAP_FIXED, *(["--share-net"] if share_net else []), *fds, *_BWRAP_SYSTEM]
    if (ws.etc / "passwd").exists():
        a += ["--ro-bind", str(ws.etc / "passwd"), "/etc/passwd", "--ro-bind", str(ws.etc / "group"), "/etc/group"]
    if call_dir is not None:  # on the episode's size- and inode-capped scratch tmpfs
        a += ["--bind", str(call_dir / "tmp"), "/tmp"]
    else:
        a += ["--size", str(limits.tmp_mb << 20), "--tmpfs", "/tmp"]
    for p in ro_paths:  # a tree inside a hidden path is not bound at all
        if p.exists() and not any(p.is_relative_to(h) for h in hidden):
            a += ["--ro-bind", str(staged.get(p, p)), str(p)]
    a += ["--bind", str(ws.root), APP]
    for b in binds:
        a += ["--bind" if b.writable else "--ro-bind", str(b.source), b.target]
    bound = [*ro_paths, Path("/usr"), Path("/etc")]
    for h in hidden:
        if h.exists() and any(h.is_relative_to(b) for b in bound):
            a += ["--size", "4096", "--tmpfs", str(h), "--remount-ro", str(h)]  # empty, unwritable
    a += ["--proc", "/proc", "--dev", "/dev"]
    if call_dir is not None:
        a += ["--bind", str(call_dir / "shm"), "/dev/shm"]
    else:
        a += ["--size", str(limits.tmp_mb << 20), "--tmpfs", "/dev/shm"]
    a += ["--remount-ro", "/", "--chdir", cwd]
    for k, v in env.items():
        a += ["--setenv", k, v]
    return a


def image_bwrap_args(bwrap: str, merged: Path, limits: Limits, binds: Sequence[Bind], env: Mapping[str, str],
                     cwd: str, call_dir: Path | None, fds: Sequence[str] = (), share_net: bool = False) -> list[str]:
    """bwrap's command line for an episode that runs in a task image (tasks/images/rootfs.py): the
    episode's overlay root at / (writable: changes go to its upper folder), the workspace uid
    shown as uid 0 (`--uid 0`: the image's root, whose files the uid-shifted layers give to the
    workspace uid), per-call /tmp and /dev/shm, fresh /proc and /dev. Every other confinement is
    the same as `bwrap_args` (namespaces, no capabilities, seccomp, no network; `share_net` as there)."""
    a = [bwrap, *_BWRAP_FIXED, *(["--share-net"] if share_net else []), *fds, "--uid", "0", "--gid", "0", "--bind", str(merged), "/"]
    if call_dir is not None:
        a += ["--bind", str(call_dir / "tmp"), "/tmp"]
    else:
        a += ["--size", str(limits.tmp_mb << 20), "--tmpfs", "/tmp"]
    for b in binds:
        a += ["--bind" if b.writable else "--ro-bind", str(b.source), b.target]
    a += ["--proc", "/proc", "--dev", "/dev"]
    if call_dir is not None:
        a += ["--bind", str(call_dir / "shm"), "/dev/shm"]
    else:
        a += ["--size", str(limits.tmp_mb << 20), "--tmpfs", "/dev/shm"]
    a += ["--chdir", cwd]
    for k, v in env.items():
        a += ["--setenv", k, v]
    return a


def inner_command(command: str | Sequence[str], limits: Limits, nproc: int, exec_init: bool,
                  shell: tuple[Sequence[str], str] | None = None) -> list[str]:
    """pid 1 of the sandbox: a shell that sets the limits (hard and soft: the command can only
    lower them), then runs the command and waits for it (module docstring). `eval` keeps bash
    from exec-ing a lone command away; argv commands get a dash init. `exec_init` (argv only):
    the command itself is pid 1 and must reap. `shell` = (argv prefix, "bash" or "dash"): that
    shell instead of the root's /bin/sh and /bin/bash (grading in a task image runs it from the
    grader's trusted base, tasks/images/trust.py: the root's own /bin/sh is the agent's to replace)."""
    if shell is not None:
        prefix, dialect = list(shell[0]), shell[1]
        if isinstance(command, str):
            return [*prefix, "-c", ulimits(limits, nproc, dialect) + 'eval "$1"', "bash", command]
        tail = 'exec "$@"' if exec_init else '"$@"; exit $?'
        return [*prefix, "-c", ulimits(limits, nproc, dialect) + tail, "sh", *command]
    if isinstance(command, str):
        return ["/bin/bash", "-c", ulimits(limits, nproc, "bash") + 'eval "$1"', "bash", command]
    tail = 'exec "$@"' if exec_init else '"$@"; exit $?'
    return ["/bin/sh", "-c", ulimits(limits, nproc, "dash") + tail, "sh", *command]


def ulimits(limits: Limits, nproc: int, shell: str) -> str:
    """Shell statements setting the limits, or exiting 125 (never run a command unlimited).
    One limit per `ulimit` (dash takes only one); -f counts 512-byte blocks in dash, 1 KiB in bash."""
    block = 512 if shell == "dash" else 1024
    procs = "-p" if shell == "dash" else "-u"
    steps = [f"ulimit -t {limits.cpu_s}", f"ulimit -v {limits.memory_mb << 10}", f"ulimit {procs} {nproc}",
             f"ulimit -f {(limits.file_mb << 20) // block}", f"ulimit -n {limits.nofile}", "ulimit -c 0"]
    return " && ".join(steps) + " || { echo 'harnessrl sandbox: cannot set resource limits' >&2; exit 125; }; "


def drop_root(ws: Workspace, holder_pid: int | None, netns: str | None = None) -> list[str]:
    """The prefix that leaves root for the workspace uid: through nsenter when the command must
    also enter the staging mount namespace or the episode's network namespace (`netns`, a path
    for `--net=`; one exec for all), else through setpriv. Both clear the supplementary groups
    and set real, effective and saved ids, so no capability is left."""
    if holder_pid is not None or netns is not None:
        return ["nsenter", *([f"--mount=/proc/{holder_pid}/ns/mnt"] if holder_pid is not None else []),
                *([f"--net={netns}"] if netns is not None else []),
                f"--setuid={ws.uid}", f"--setgid={ws.gid}", "--"]
    return ["setpriv", f"--reuid={ws.uid}", f"--regid={ws.gid}", "--clear-groups", "--"]


def cgroup_join(join_files: Sequence[str]) -> list[str]:
    """The prefix that joins the episode's cgroup(s) as root, then execs the rest of the chain;
    a command that cannot join never runs (exit 125). Writes `0` (this process) to each file: see
    cgroup.py for why v1 hierarchies are joined through `tasks`."""
    n = len(join_files)
    join = " && ".join(f'echo 0 > "${k + 1}"' for k in range(n))
    return ["/bin/sh", "-c", join + f' && shift {n} && exec "$@" || '
            "{ echo 'harnessrl sandbox: cannot join the episode cgroup' >&2; exit 125; }",
            "sh", *join_files]


def unsafe_argv(command: str | Sequence[str], limits: Limits, nproc: int) -> list[str]:
    """Unsafe mode: the limits through prlimit, and nothing else."""
    return [
        "prlimit", f"--cpu={limits.cpu_s}", f"--as={limits.memory_mb << 20}", f"--nproc={nproc}",
        f"--fsize={limits.file_mb << 20}", f"--nofile={limits.nofile}", "--core=0", "--",
        *(["/bin/bash", "-c", command] if isinstance(command, str) else command),
    ]


def count_processes(uid: int) -> int:
    """How many processes `uid` has now (RLIMIT_NPROC counts them all, not just the sandbox's)."""
    n = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    n += 1
            except OSError:
                pass
    return n


__all__ = ["Bind", "bwrap_args", "cgroup_join", "count_processes", "drop_root", "image_bwrap_args", "inner_command",
           "ulimits", "unsafe_argv"]
