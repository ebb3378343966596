"""Ctrl-C that is never lost: a SIGINT is remembered, and long jobs stop at their next safe point.

    install()      the CLI's main thread: SIGINT raises KeyboardInterrupt (as Python's default does)
                   AND sets a flag
    check()        between stages of a long job: raise KeyboardInterrupt if a SIGINT came

Why: Python's default handler raises KeyboardInterrupt wherever the main thread happens to be. When
that is a finaliser (`__del__` run by the garbage collector, e.g. a regex group's), Python prints
"Exception ignored in ..." and carries on: the interrupt is gone and the job runs to its end. The flag
survives that, so the next stage boundary ends the run (exit 130) as the user asked.
"""

from __future__ import annotations

import signal
import threading

_pending = False


def _on_sigint(signum, frame):  # noqa: ARG001
    global _pending
    _pending = True
    raise KeyboardInterrupt


def install() -> None:
    """Take SIGINT in this process (main thread only; elsewhere signals cannot be handled)."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


def check() -> None:
    """Raise KeyboardInterrupt if a SIGINT arrived since the process started (even one a finaliser swallowed)."""
    if _pending:
        raise KeyboardInterrupt


def pending() -> bool:
    return _pending


def reset() -> None:
    """Forget a SIGINT (a new command starts; in-process callers such as tests run several)."""
    global _pending
    _pending = False


__all__ = ["check", "install", "pending", "reset"]
