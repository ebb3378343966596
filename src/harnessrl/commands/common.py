"""Helpers every command shares: the console, the default store path, error exits."""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from collections.abc import Callable, Iterator
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from harnessrl.config import ConfigError
from harnessrl.records import RecordStoreError

# markup off: model text, task names and paths print literally (`[month - 1]`, `[/tmp/notes]`); a line that
# styles a word of ours passes markup=True and escapes everything else
console = Console(soft_wrap=True, markup=False)
err_console = Console(stderr=True, soft_wrap=True, markup=False)


def default_store() -> Path:
    return Path(os.environ.get("HARNESSRL_STORE", "runs/store"))


def path_arg(value: str | Path) -> Path:
    """A path option's parser: an empty string is an error, not the current folder (Path("") == Path("."))."""
    if isinstance(value, Path):
        return value
    if not value.strip():
        raise typer.BadParameter("empty; give a path")
    return Path(value)


StoreOption = typer.Option(None, "--store", "-s", parser=path_arg, help="Record store directory [env HARNESSRL_STORE, default runs/store].")


def fail(message: str, code: int = 2) -> typer.Exit:
    message = one_line(message)
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True, soft_wrap=True)
    return typer.Exit(code)


def one_line(message: str) -> str:
    """Multi-line messages (a config with several bad fields) become one line: `error: ...` is one line."""
    return "; ".join(part.strip().rstrip(":;.") if i else part.strip() for i, part in enumerate(message.splitlines())
                     if part.strip()).replace(":;", ":")


def os_error_message(err: OSError) -> str:
    where = f"{err.filename}: " if err.filename else ""
    return f"{where}{err.strerror or err}"


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the errors meant for users into a clean message and exit code 2 (no traceback).

    OSError counts: a full disk, a read-only folder or a folder where a file should be are the user's
    to fix, and the message names the path."""
    try:
        yield
    except (ConfigError, RecordStoreError) as err:
        raise fail(one_line(str(err))) from None
    except OSError as err:
        raise fail(os_error_message(err)) from None


def _probe(folder: Path) -> str | None:
    """Why nothing can be created in `folder` (None: it can). Creates and removes one empty file: as root,
    permission bits say nothing, and a read-only mount or a full disk only shows when one tries."""
    probe = folder / f".harnessrl-write-probe-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError as err:
        return err.strerror or str(err)
    os.close(fd)
    probe.unlink(missing_ok=True)
    return None


def _nearest_existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_writable_dir(path: Path, option: str) -> None:
    """Exit 2 before any work unless `path` is a folder we can write in, or one we could create."""
    if path.exists():
        if not path.is_dir():
            raise fail(f"{option} {path}: not a folder; give a folder (it is created if missing)")
        why = _probe(path)
    else:
        base = _nearest_existing(path)
        if not base.is_dir():
            raise fail(f"{option} {path}: {base} is a file, so the folder cannot be created there")
        why = _probe(base)
    if why:
        raise fail(f"{option} {path}: cannot write there ({why}); choose a writable folder")


def check_writable_file(path: Path, option: str) -> None:
    """Exit 2 before any work unless `path` names a file we can create or replace (its folder must exist)."""
    if str(path) in ("", "."):
        raise fail(f"{option}: give a file name")
    if path.is_dir():
        raise fail(f"{option} {path}: is a folder; give a file name")
    folder = path.absolute().parent
    if not folder.is_dir():
        raise fail(f"{option} {path}: the folder {folder} does not exist; create it first")
    why = _probe(folder)
    if why:
        raise fail(f"{option} {path}: cannot write in {folder} ({why}); choose a writable place")


def check_store_writable(store: Path, option: str = "--store") -> None:
    """A store a command will append to: a writable folder (or creatable), with a writable manifest."""
    check_writable_dir(store, option)
    manifest = store / "manifest.jsonl"
    if manifest.is_dir():
        raise fail(f"{option} {store}: {manifest} is a folder, not the manifest file")


def int_list(text: str, option: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise fail(f"{option} {text!r}: give whole numbers separated by commas, e.g. 1,5") from None


def progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=False,
    )


@contextmanager
def stage_progress() -> Iterator[Callable[[str, int, int | None], None]]:
    """A progress display with one bar per stage, for recipes that report `tick(stage, done, total)`."""
    with progress() as bar:
        tasks: dict[str, int] = {}

        def tick(stage: str, i: int, n: int | None) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=n)
            bar.update(tasks[stage], completed=i, total=n)

        yield tick


def invoked_command(default: str) -> str:
    """The command line this process was started with (for a report's "reproduce"), or `default`
    when it runs in-process without arguments (tests, notebooks)."""
    import shlex
    import sys

    return "harnessrl " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else default


def lm_recipe_config(model_cls, scale: str, preset: dict, config: Path | None, overrides: list[str], out: Path,
                     resume: bool, **given):
    """An LM recipe's config from its scale preset, a file, --set overrides and the options given (None = not
    given); refuses --scale paper without a model and a used output folder without --resume."""
    from harnessrl.config import load_config

    sets = list(overrides) + [f"{k}={v}" for k, v in given.items() if v is not None]
    cfg = load_config(model_cls, config, sets, base=preset)
    if cfg.scale == "paper" and not cfg.model:
        raise fail(f"--scale {scale} needs --model (a real model, on a GPU)")
    # fail before any work (and before anything is written to --out): the checks below are cheap
    check_writable_dir(out, "--out")
    if cfg.model is not None:
        check_model(cfg.model)
    if getattr(cfg, "backend", None) == "ray" and not getattr(cfg, "ray_address", None):
        check_local_ray()
    if out.exists() and any(out.iterdir()) and not resume:
        raise fail(f"{out} is not empty; pass --resume to continue it, or choose another --out")
    return cfg


def check_model(model: str) -> None:
    """A model folder with config.json, or an id already in the local Hugging Face cache (no hub here)."""
    if not model.strip():
        raise fail("--model is empty; give a model folder (or leave --model out to build a tiny LM)")
    from harnessrl import models

    try:
        model = models.resolve(model)  # a known name (smollm2-135m) -> its installed folder
    except ConfigError as e:
        raise fail(f"--model: {e}") from None
    path = Path(model)
    if path.exists():
        if not (path / "config.json").is_file():
            raise fail(f"--model {model}: not a model folder (no config.json in it)")
        return
    if re.fullmatch(r"[\w.-]+(/[\w.-]+)?", model) and not model.startswith("."):
        try:
            from huggingface_hub import try_to_load_from_cache

            if isinstance(try_to_load_from_cache(model, "config.json"), str):
                return
        except Exception:  # an id the cache cannot parse: treated as not cached
            pass
    raise fail(f"--model {model}: no such folder, and not a model id in the local Hugging Face cache "
               "(nothing is downloaded here); give a model folder")


def check_local_ray() -> None:
    """--backend ray without --ray-address starts a local Ray, allowed only in a loopback-only namespace."""
    from harnessrl.rollout.backends import loopback_only

    if not loopback_only() and os.environ.get("HARNESSRL_RAY_ALLOW_NETWORK") != "1":
        raise fail("--backend ray: a local Ray probes outside network addresses when it starts; run inside a "
                   "loopback-only network namespace (e.g. `unshare -n sh -c 'ip link set lo up && harnessrl ...'`), "
                   "give --ray-address of an existing cluster, or set HARNESSRL_RAY_ALLOW_NETWORK=1 to accept that")
    try:
        import ray  # noqa: F401
    except ImportError:
        raise fail("--backend ray needs Ray: pip install 'harnessrl[ray]'") from None
