"""`harnessrl` — the command line. Mounts the command groups in `harnessrl.commands`."""

from __future__ import annotations

import typer

from harnessrl import __version__
from harnessrl.commands import audit as audit_cmd
from harnessrl.commands import eval as eval_cmd
from harnessrl.commands import analyze, bipa, recipe, records, seal, study, train

app = typer.Typer(
    name="harnessrl",
    help="Train and audit agents across harnesses, parallel environments and learned rewards.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
app.add_typer(records.app, name="records")
app.command("eval")(eval_cmd.eval_command)
app.add_typer(seal.app, name="seal")
app.add_typer(bipa.app, name="bipa")
app.add_typer(recipe.app, name="recipe")
app.add_typer(train.app, name="train")
app.command("analyze")(analyze.analyze)
app.command("study")(study.study)
app.command("audit")(audit_cmd.audit_command)


@app.command()
def version() -> None:
    """Print the harnessrl version and the versions of the libraries it runs on."""
    import importlib.metadata as md

    typer.echo(f"harnessrl {__version__}")
    for dist in ("torch", "transformers", "peft", "gymnasium", "pyarrow", "duckdb"):
        try:
            typer.echo(f"  {dist} {md.version(dist)}")
        except md.PackageNotFoundError:
            typer.echo(f"  {dist} (not installed)")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
