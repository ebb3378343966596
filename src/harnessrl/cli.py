"""`harnessrl` — the command line. Mounts the command groups in `harnessrl.commands`."""

from __future__ import annotations

import re
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
from harnessrl.commands import images as images_cmd
from harnessrl.commands import models as models_cmd
from harnessrl.commands import agents as agents_cmd
from harnessrl.commands import gateway as gateway_cmd


#: commands where `-o` once meant --policy-option; it means --out in every command now
_POLICY_OPTION_COMMANDS = (["eval"], ["recipe", "bipa"])


def legacy_policy_option(args: list[str]) -> list[str]:
    """`--policy-option KEY=VALUE` (the old spelling of --policy-option in `eval` and `recipe bipa`) still works, with a
    note: a value that reads KEY=VALUE is a policy option, anything else is the --out folder."""
    if not any(args[:len(cmd)] == cmd for cmd in _POLICY_OPTION_COMMANDS):
        return args
    out = list(args)
    for i, arg in enumerate(out[:-1]):
        if arg == "-o" and re.match(r"[A-Za-z_][\w.]*=", out[i + 1]):
            out[i] = "--policy-option"
            typer.echo(f"note: -o {out[i + 1]} is read as --policy-option {out[i + 1]}; -o is --out in every "
                       "command now, write --policy-option", err=True)
    return out


class OneLineErrors(TyperGroup):
    """Usage errors (a missing option, a value of the wrong type) print one line, `error: ...`, and exit 2,
    like every error a command reports itself; help still prints when a group is called without a command."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):  # type: ignore[override]
        from harnessrl import interrupts

        interrupts.reset()  # one command, one Ctrl-C: a test's in-process CliRunner calls start clean
        if args is None and standalone_mode:  # the real command line (a process of its own): no Ctrl-C is lost
            interrupts.install()
        args = legacy_policy_option(list(sys.argv[1:] if args is None else args))
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
def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"harnessrl {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(show_version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                           help="Print the harnessrl version and exit (`harnessrl version`: with libraries).")) -> None:
    """Train and audit agents across harnesses, parallel environments and learned rewards."""


app.add_typer(records.app, name="records")
app.command("eval")(eval_cmd.eval_command)
app.add_typer(seal.app, name="seal")
app.add_typer(bipa.app, name="bipa")
app.add_typer(recipe.app, name="recipe")
app.add_typer(train.app, name="train")
app.command("analyze")(analyze.analyze)
app.command("study")(study.study)
app.add_typer(tasks_cmd.app, name="tasks")
app.add_typer(images_cmd.app, name="images")
app.add_typer(models_cmd.app, name="models")
app.add_typer(agents_cmd.app, name="agents")
app.add_typer(gateway_cmd.app, name="gateway")
app.command("audit")(audit_cmd.audit_command)


def literal_help(typer_app: typer.Typer, seen: set[int] | None = None) -> None:
    """Help lines print as written: Typer's Rich help reads `[env HARNESSRL_STORE, default runs/store]` as a
    markup tag and drops it, so every command, group and option help of the tree is escaped once, here."""
    import inspect

    from rich.markup import escape

    seen = set() if seen is None else seen

    def once(obj) -> None:  # Option/Argument infos are shared between commands (StoreOption): escape each once
        if id(obj) not in seen and isinstance(getattr(obj, "help", None), str):
            seen.add(id(obj))
            obj.help = escape(obj.help)

    once(typer_app.info)
    for cmd in typer_app.registered_commands:
        if cmd.help is None and cmd.callback is not None and cmd.callback.__doc__:
            cmd.help = inspect.getdoc(cmd.callback)
        once(cmd)
        for param in inspect.signature(cmd.callback).parameters.values() if cmd.callback else ():
            once(param.default)
    for group in typer_app.registered_groups:
        once(group)
        literal_help(group.typer_instance, seen)


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


literal_help(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
