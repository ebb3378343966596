"""The syscall filter every sandboxed process (agent and grader) runs under, via `bwrap --seccomp FD`.

What it blocks (EPERM; `clone3` gets ENOSYS so libc falls back to `clone`, whose flags we can
inspect): calls no task needs and that only serve to reach another process or the kernel —

    ptrace, process_vm_readv/writev, pidfd_getfd, kcmp          another process's memory and fds
    io_uring_setup/enter/register                               a second syscall path, unfiltered
    bpf, perf_event_open, userfaultfd                           kernel attack surface
    kexec_*, init/finit/delete_module, reboot, swapon/off, acct  the machine itself
    keyctl, add_key, request_key                                 the kernel keyring (not namespaced)
    mount family, pivot_root, chroot, setns, unshare             namespaces and mounts
    clone with any CLONE_NEW* flag                               new namespaces (user ones above all)
    ioctl(TIOCSTI), ioctl(TIOCLINUX)                             typing into another terminal
    open_by_handle_at, name_to_handle_at                         opening files around bind mounts
    settimeofday, clock_settime, adjtimex, syslog, quotactl      host-wide state

How the filter is built: with libseccomp's own Python bindings (Debian `python3-seccomp`,
maintained with libseccomp itself), not hand-written BPF. Those bindings are compiled for the
system's /usr/bin/python3, not for the interpreter harnessrl runs under (the venv's pyenv 3.11),
so the filter is compiled ONCE per process by `/usr/bin/python3` and exported as the cBPF
program bwrap loads (`seccomp_export_bpf`). The PyPI `pyseccomp` (ctypes over the same
libseccomp) was not chosen: its last release is from 2021. Without the bindings `filter_bpf()`
returns None and the sandbox warns loudly (scripts/setup-system.sh installs them).
"""

from __future__ import annotations

import functools
import os
import subprocess

SYSTEM_PYTHON = "/usr/bin/python3"

BLOCKED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "bpf", "perf_event_open", "userfaultfd",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "acct",
    "keyctl", "add_key", "request_key",
    "mount", "umount2", "pivot_root", "chroot", "setns", "unshare",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    "open_by_handle_at", "name_to_handle_at",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "syslog", "quotactl", "lookup_dcookie",
)
CLONE_NEW_FLAGS = 0x7E020080  # NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWTIME(0x80)
TIOCSTI, TIOCLINUX = 0x5412, 0x541C

_BUILD = r"""
import errno, sys, seccomp
blocked, clone_new, ioctls = sys.argv[1].split(","), int(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")]
f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
for name in blocked:
    try:
        f.add_rule(seccomp.ERRNO(errno.EPERM), name)
    except (RuntimeError, ValueError, OSError):
        pass  # a syscall this kernel/libseccomp does not know cannot be called either
f.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
for bit in range(32):  # any one namespace flag is enough to refuse (MASKED_EQ needs all bits)
    if clone_new >> bit & 1:
        f.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, 1 << bit, 1 << bit))
for req in ioctls:
    f.add_rule(seccomp.ERRNO(errno.EPERM), "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, req))
f.export_bpf(sys.stdout.buffer)
"""


@functools.cache
def filter_bpf() -> bytes | None:
    """The compiled cBPF program (bytes), or None when libseccomp's Python bindings are missing."""
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return None
    try:
        out = subprocess.run(
            [SYSTEM_PYTHON, "-I", "-c", _BUILD, ",".join(BLOCKED), str(CLONE_NEW_FLAGS), f"{TIOCSTI},{TIOCLINUX}"],
            capture_output=True, timeout=30, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out if out and len(out) % 8 == 0 else None  # one sock_filter is 8 bytes


def filter_fd(bpf: bytes) -> int:
    """A pipe read end holding the program, for `bwrap --seccomp FD` (bwrap reads it to EOF)."""
    r, w = os.pipe()
    try:
        os.write(w, bpf)  # a few KiB: fits in the pipe buffer
    finally:
        os.close(w)
    return r


__all__ = ["BLOCKED", "filter_bpf", "filter_fd"]
