"""`harnessrl records {list, show, query, verify, export, repair, recover}`."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from harnessrl.commands.common import (
    path_arg, StoreOption, check_writable_file, console, default_store, fail, progress, user_errors,
)
from harnessrl.records import RecordStore, episode_to_json
from harnessrl.records import recover as recover_store
from harnessrl.records import repair as repair_store

app = typer.Typer(help="Inspect, query, verify and export a record store.", no_args_is_help=True)


def _open(store: Path | None, verify: str = "read", damaged_ok: bool = False) -> RecordStore:
    """Every read verifies each shard it reads (SHA-256, footer, rows; verdicts cached by size and mtime)."""
    return RecordStore(store or default_store(), create=False, verify=verify, damaged_ok=damaged_ok)  # type: ignore[arg-type]


def print_table(table, title: str | None = None, limit: int = 200) -> None:
    t = Table(title=title)
    for name in table.column_names:
        t.add_column(name)
    for row in table.slice(0, limit).to_pylist():
        t.add_row(*(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row.values()))
    console.print(t)
    if table.num_rows > limit:
        console.print(f"... {table.num_rows - limit} more rows")


@app.command("list")
def list_(store: Path = StoreOption) -> None:
    """Episodes per run, policy and harness, with solve rates."""
    with user_errors():
        s = _open(store)
        table = s.sql(  # verifies every shard before anything is printed
            "SELECT run_id, policy_id, harness_id, count(*) AS episodes, "
            "avg(success::DOUBLE) AS solve_rate, avg(num_turns) AS mean_turns "
            "FROM episodes GROUP BY ALL ORDER BY ALL"
        )
    console.print(f"{s.root}: {len(s.shards)} shards, {s.count()} episodes")
    print_table(table)


@app.command()
def show(
    episode_id: str = typer.Argument(..., help="An episode id or a unique prefix of one."),
    store: Path = StoreOption,
    as_json: bool = typer.Option(False, "--json", help="Print the whole record as JSON."),
) -> None:
    """Show one episode with its turns."""
    with user_errors():
        s = _open(store)
        eps = s.episodes(where=f"starts_with(episode_id, '{episode_id.replace(chr(39), '')}')")
    if not eps:
        raise fail(f"no episode with id starting {episode_id!r} in {s.root}")
    if len(eps) > 1:
        raise fail(f"{len(eps)} episodes start with {episode_id!r}; give more characters")
    ep = eps[0]
    if as_json:
        console.print_json(json.dumps(episode_to_json(ep), ensure_ascii=False))
        return
    c = ep.context
    console.print(  # the console reads no markup: ids, outcomes and turns print as they are
        f"{ep.episode_id}  task={c.task_id} harness={c.harness_id} env={c.env_id} "
        f"level={c.level} seed={c.seed} policy={ep.policy_id} run={ep.run_id}"
    )
    console.print(
        f"reward={ep.reward} raw_reward={ep.raw_reward} success={ep.success} outcome={ep.outcome!r} "
        f"status={ep.status} turns={ep.num_turns} format_errors={ep.format_errors} "
        f"tokens in/out={ep.tokens_in}/{ep.tokens_out} wall={ep.wall_time:.2f}s"
    )
    for i, t in enumerate(ep.turns):
        console.rule(Text(f"turn {i} [{t.status}] {len(t.token_ids)} tokens"))
        console.print(Text("observation:", style="dim"), Text(t.observation), highlight=False, soft_wrap=True)
        console.print(Text("action:", style="dim"), Text(t.action), highlight=False, soft_wrap=True)
        if t.tool_result:
            console.print(Text("tool result:", style="dim"), Text(t.tool_result), highlight=False, soft_wrap=True)


@app.command()
def query(
    sql: str = typer.Argument(..., help="SQL over the view `episodes`, e.g. \"SELECT harness_id, avg(success::INT) FROM episodes GROUP BY 1\"."),
    store: Path = StoreOption,
    limit: int = typer.Option(200, help="Rows to print."),
    csv: Path = typer.Option(None, parser=path_arg, help="Also write the result to this CSV file (its folder must exist)."),
) -> None:
    """Run SQL (DuckDB) over every committed shard.

    Read-only: the query sees the view `episodes` and nothing else. DuckDB's file access is off, so
    COPY ... TO, ATTACH, INSTALL and reading host files (read_csv, read_parquet of other paths) are
    refused; export episodes with `records export`, write results with --csv."""
    with user_errors():
        if csv is not None:
            check_writable_file(csv, "--csv")  # before the query, so nothing prints and then fails
        result = _open(store).sql(sql)
        if csv is not None:
            import pyarrow.csv as pacsv

            tmp = csv.with_name(f".{csv.name}.tmp")
            try:
                pacsv.write_csv(result, tmp)
                tmp.replace(csv)
            finally:
                tmp.unlink(missing_ok=True)
    print_table(result, limit=limit)
    if csv is not None:
        console.print(f"wrote {result.num_rows} rows to {csv}")


_ADVICE = {
    "none": "not in the manifest, and no writer holds the store: left by a killed writer, never committed; safe to delete",
    "live": "in flight: a live writer holds the store and commits it soon; do not delete",
    "unknown": "not in the manifest; whether a writer is alive cannot be told here (read-only lock file): "
               "delete only when no harnessrl process writes to this store",
}


@app.command()
def verify(
    store: Path = StoreOption,
    drop_corrupt: bool = typer.Option(False, "--drop-corrupt", help="Remove corrupt shards from the manifest (their episodes are lost)."),
) -> None:
    """Check every shard (size, SHA-256, Parquet footer, row count) and the manifest (torn last line, duplicate
    lines), look for episode ids and evaluation cells (run, task, harness, seed) stored twice, and list files no
    manifest line names. Exit 1 on any problem."""
    with user_errors():
        s = _open(store, verify="none", damaged_ok=True)
        with progress() as bar:
            task = bar.add_task("verifying shards", total=len(s.shards))
            report = s.verify(progress=lambda: bar.advance(task))
        for p in report["problems"]:
            console.print(f"[red]PROBLEM[/] {escape(str(p))}", highlight=False, soft_wrap=True, markup=True)
        for u in report["uncommitted"]:
            console.print(f"[yellow]uncommitted[/] {escape(str(u))} ({_ADVICE[report['writers']]})", highlight=False, soft_wrap=True, markup=True)
        if report["problems"] and drop_corrupt:
            dropped = s.drop_corrupt()
            console.print(f"dropped {len(dropped)} corrupt shards from the manifest")
            return
    if report["problems"]:
        raise typer.Exit(1)
    console.print(f"[green]ok[/] {report['shards']} shards, {report['episodes']} episodes verified", markup=True)


@app.command()
def repair(
    store: Path = StoreOption,
    keep_torn: bool = typer.Option(False, "--keep-torn", help="Complete a torn last line instead of dropping it, when "
                                   "its shard verifies (its writer never reported those episodes stored)."),
) -> None:
    """Fix what `verify` calls repairable in the manifest: a torn last line (dropped: that commit never finished)
    and shards listed twice (the second line dropped). Nothing else is touched."""
    with user_errors():
        root = store or default_store()
        _open(root, verify="none", damaged_ok=True)  # a store at all, with a parseable manifest
        changes = repair_store(root, keep_torn=keep_torn)
    for c in changes:
        console.print(f"repaired: {c}", highlight=False)
    if not changes:
        console.print(f"nothing to repair in {root}")


@app.command()
def recover(store: Path = StoreOption) -> None:
    """Rebuild a lost or unreadable manifest from the shard files (each carries its schema and row count).
    A damaged manifest is kept aside as manifest.jsonl.damaged-TIME. Shards a killed writer never
    committed come back too: run `records verify` afterwards to spot episode ids stored twice."""
    with user_errors():
        res = recover_store(store or default_store())
    for s in res["skipped"]:
        console.print(f"[yellow]skipped[/] {escape(str(s))}", highlight=False, markup=True)
    if res["kept_aside"]:
        console.print(f"the damaged manifest is kept as {res['kept_aside']}", highlight=False)
    console.print(f"recovered {res['shards']} shards, {res['episodes']} episodes; check with "
                  f"`harnessrl records verify --store {store or default_store()}`", highlight=False)


@app.command()
def export(
    out: Path = typer.Argument(..., parser=path_arg, help="Output file: .jsonl or .parquet."),
    store: Path = StoreOption,
    where: str = typer.Option(None, help="SQL condition over `episodes`, e.g. \"harness_id = 'aider'\"."),
    fmt: str = typer.Option("episodes", "--format", help="episodes: every field of each episode; sft: one "
                            "{\"messages\": [...]} line per episode, the stored conversation (TRL SFT's conversational "
                            "format), e.g. with --where success."),
) -> None:
    """Export episodes to JSONL or to one Parquet file (pandas, polars, datasets read it), or their conversations
    as an SFT dataset. Written to a temporary file renamed onto OUT at the end: on any error an existing OUT is
    left as it was."""
    if fmt not in ("episodes", "sft"):
        raise fail(f"--format {fmt!r}: use episodes or sft")
    if out.suffix not in (".jsonl", ".parquet") or (fmt == "sft" and out.suffix != ".jsonl"):
        raise fail(f"{out}: unknown export format {out.suffix!r}; use .jsonl" + (" with --format sft" if fmt == "sft" else " or .parquet"))
    with user_errors():
        check_writable_file(out, "OUT")
        s = _open(store)
        if fmt == "sft":
            n, skipped = s.export_sft(out, where)
            if skipped:
                console.print(f"skipped {skipped} episodes that store no conversation (written before record schema 2)")
        else:
            n = s.export_jsonl(out, where) if out.suffix == ".jsonl" else s.export_parquet(out, where)
    console.print(f"wrote {n} episodes to {out}")
