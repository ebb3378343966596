"""Write a file so that readers see the old one or the whole new one, never a torn copy.

    atomic_write(path, lambda f: f.write(data))             # bytes
    atomic_write_text(path, json.dumps(result))             # text

The data goes to a temporary file next to `path` whose name is unique to this process and
call (two writers of the same file never share a temporary name), is flushed and fsync'ed,
then renamed over `path` and the folder fsync'ed. A writer killed half way leaves at most a
stray `.NAME.*.tmp` file, which nothing reads. Every result, stage and checkpoint file of the
recipes and trainers goes through here.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def fsync_dir(path: Path) -> None:
    """Make a rename in `path` durable (POSIX: the directory entry is data of the directory)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_name(path: Path) -> Path:
    """A temporary name beside `path`, unique to this process and call."""
    return path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")


def atomic_write(path: str | os.PathLike, write: Callable[[IO[bytes]], Any]) -> Path:
    """Call write(f) on a temporary binary file, then rename it to `path` (both fsync'ed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path)
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """`text` (UTF-8) to `path`, atomically."""
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")))
