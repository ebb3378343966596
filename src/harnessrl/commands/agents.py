"""`harnessrl agents`: the real agent programs (mini-swe-agent, Aider, ...), pinned and hashed.

    harnessrl agents list
    harnessrl agents install mini-swe-agent      # once, from the registry; then a no-op that verifies
    harnessrl agents verify mini-swe-agent       # every file against the manifest's SHA-256
"""

from __future__ import annotations

import time

import typer
from harnessrl.commands.common import console, err_console, fail, user_errors

app = typer.Typer(help="Real agent programs (mini-swe-agent, aider-cli, ...): list, install pinned, verify.",
                  no_args_is_help=True)


@app.command("list")
def list_programs() -> None:
    """Known programs, whether each is installed, its version, size and folder."""
    from harnessrl.agents import install as inst

    for r in inst.listing():  # plain lines: readable in a narrow terminal and by scripts
        size = f"{r['size_mb']:.0f} MB" if r["installed"] else "-"
        digest = r["content_hash"][:12] if r["content_hash"] else "-"
        typer.echo(f"{r['name']}\t{r['package']}\t{r['kind']}\tinstalled={'yes' if r['installed'] else 'no'}\t"
                   f"{size}\t{digest}\t{r['path']}\t{r['description']}")
    console.print(f"agents folder: {inst.agents_dir()} (env HARNESSRL_AGENTS_DIR)")


@app.command("install")
def install(name: str = typer.Argument(..., help="A program name from `harnessrl agents list`."),
            force: bool = typer.Option(False, "--force", help="Remove and install again even when installed.")) -> None:
    """Install a program, pinned, into its own environment (network once); later calls verify it."""
    from harnessrl.agents import install as inst

    with user_errors():
        was = inst.is_installed(name)
        t0 = time.perf_counter()
        m = inst.install(name, force=force, progress=lambda msg: err_console.print(f"{name}: {msg}"))
    where = inst.program_dir(name)
    if was and not force:
        console.print(f"{name} already installed and intact -> {where} (content {m['content_hash'][:12]})")
        return
    console.print(f"installed {name} {m['version']} -> {where} ({m['size_bytes'] / 1e6:.0f} MB, "
                  f"{len(m['files'])} files, content {m['content_hash'][:12]}, {time.perf_counter() - t0:.0f} s)")


@app.command("verify")
def verify(name: str = typer.Argument(..., help="An installed program name.")) -> None:
    """Re-hash an installed program against its manifest; exit 1 on any difference."""
    from harnessrl.agents import install as inst

    with user_errors():
        inst.program(name)
        if not inst.is_installed(name):
            raise fail(f"agent program {name!r} is not installed; run `harnessrl agents install {name}`")
        problems = inst.verify(name)
    for p in problems[:50]:
        err_console.print(f"[red]{p}[/]")
    if problems:
        err_console.print(f"[red]{len(problems)} differences[/]")
        raise typer.Exit(1)
    console.print(f"{name}: every file matches its SHA-256")
