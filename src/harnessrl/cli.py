"""`harnessrl` — the command line. Mounts the command groups in `harnessrl.commands`."""

from __future__ import annotations

import sys

import typer
from typer.core import TyperGroup

try:  # typer >= 0.20 vendors click as typer._click
    from typer._click import exceptions as cx
except ImportError:  # pragma: no cover - older typer on plain click
    from click import exceptions as cx

from harnessrl import __version__
from harnessrl.commands import audit as audit_cmd
from harnessrl.commands import eval as eval_cmd
from harnessrl.commands import analyze, bipa, recipe, records, seal, study, train
from harnessrl.commands import tasks as tasks_cmd
from harnessrl.commands import models as models_cmd
from harnessrl.commands import agents as agents_cmd
from harnessrl.commands import gateway as gateway_cmd


class OneLineErrors(TyperGroup):
    """Usage errors (a missing option, a value of the wrong type) print one line, `error: ...`, and exit 2,
    like every error a command reports itself; help still prints when a group is called without a command."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):  # type: ignore[override]
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except cx.NoArgsIsHelpError as err:
            err.show()
            sys.exit(2)
        except cx.UsageError as err:
            where = err.ctx.command_path if err.ctx else "harnessrl"
            message = " ".join(err.format_message().split())
            typer.echo(f"error: {message} (see `{where} --help`)", err=True)
            sys.exit(2)
        except cx.ClickException as err:
            typer.echo(f"error: {' '.join(err.format_message().split())}", err=True)
            sys.exit(err.exit_code)
        except typer.Abort:
            typer.echo("error: aborted", err=True)
            sys.exit(130)
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(
    cls=OneLineErrors,
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
app.add_typer(tasks_cmd.app, name="tasks")
app.add_typer(models_cmd.app, name="models")
app.add_typer(agents_cmd.app, name="agents")
app.add_typer(gateway_cmd.app, name="gateway")
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
