"""`harnessrl images base|du|prune`: the stand-in base images and the task-image store.

    harnessrl images base                      # the default stand-ins (Debian 13, Ubuntu 24.04, python:3.13-slim, ...)
    harnessrl images base python:3.11-slim     # one more (Debian 12 with its CPython 3.11)
    harnessrl images du                        # disk used by the store and each task build
    harnessrl images prune --budget 20G        # remove task builds, least recently used first

The store is $HARNESSRL_IMAGES (default ~/.cache/harnessrl/images); docs/task-images.md.
"""

from __future__ import annotations

import re

import typer
from rich.table import Table

from harnessrl.commands.common import console, fail

app = typer.Typer(help="Task images: stand-in bases, disk use, pruning.", no_args_is_help=True)


def open_store():
    """The image store, or a one-line error saying what this machine lacks."""
    from harnessrl.tasks.images.store import ImageStore, images_unavailable

    why = images_unavailable()
    if why:
        raise fail(f"task images: {why}")
    return ImageStore.default()


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)i?[bB]?\s*", text)
    if not m:
        raise fail(f"--budget {text}: give a size such as 500M or 20G")
    return int(float(m.group(1)) * 1024 ** " KMGT".index((m.group(2) or " ").upper()))


@app.command("base")
def base(names: list[str] = typer.Argument(None, help="FROM names to provide (default: the common set).")) -> None:
    """Build stand-in base images once from the Debian mirror and tag them with the names tasks ask for."""
    from harnessrl.tasks.images import bases
    from harnessrl.tasks.images.store import ImageError

    store = open_store()
    wanted = names or list(bases.DEFAULT)
    stand_ins = []
    for name in wanted:
        try:
            stand_ins.append(bases.resolve(name))
        except bases.Unreachable as err:
            raise fail(str(err)) from None
    table = Table(title=f"stand-in base images in {store.root}")
    for col in ("asked", "image", "substitution"):
        table.add_column(col, overflow="fold")
    for stand_in in stand_ins:
        try:
            bases.build_stand_in(store, stand_in, say=lambda m: console.print(m, highlight=False))
        except ImageError as err:
            raise fail(f"{stand_in.asked}: {err}") from None
        table.add_row(stand_in.asked, stand_in.image, stand_in.note)
    console.print(table)


@app.command("du")
def du() -> None:
    """Disk used by the image store, and by each task build."""
    store = open_store()
    usage = store.du()
    table = Table(title=f"{usage['root']}: {usage['storage_bytes'] / 1e6:.0f} MB in storage (shared layers once)")
    for col in ("task", "key", "image MB"):
        table.add_column(col)
    for row in usage["builds"]:
        table.add_row(row["task"], row["key"], f"{row['bytes'] / 1e6:.0f}")
    console.print(table)


@app.command("prune")
def prune(budget: str = typer.Option(..., "--budget", help="Keep the storage under this size (e.g. 20G); "
                                     "task builds go least recently used first, base images stay.")) -> None:
    """Remove task builds until the store fits the budget."""
    store = open_store()
    removed = store.prune(parse_size(budget))
    console.print(f"removed {len(removed)} task build(s); storage now {store.du()['storage_bytes'] / 1e6:.0f} MB")
