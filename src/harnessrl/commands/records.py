"""`harnessrl records {list, show, query, verify, export}`."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from harnessrl.commands.common import StoreOption, console, default_store, fail, progress, user_errors
from harnessrl.records import CorruptShardError, RecordStore, episode_to_json

app = typer.Typer(help="Inspect, query, verify and export a record store.", no_args_is_help=True)


def _open(store: Path | None, verify: str = "size") -> RecordStore:
    return RecordStore(store or default_store(), create=False, verify=verify)  # type: ignore[arg-type]


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
        console.print(f"{s.root}: {len(s.shards)} shards, {s.count()} episodes")
        print_table(
            s.sql(
                "SELECT run_id, policy_id, harness_id, count(*) AS episodes, "
                "avg(success::DOUBLE) AS solve_rate, avg(num_turns) AS mean_turns "
                "FROM episodes GROUP BY ALL ORDER BY ALL"
            )
        )


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
    console.print(
        f"[bold]{ep.episode_id}[/]  task={c.task_id} harness={c.harness_id} env={c.env_id} "
        f"level={c.level} seed={c.seed} policy={ep.policy_id} run={ep.run_id}"
    )
    console.print(
        f"reward={ep.reward} raw_reward={ep.raw_reward} success={ep.success} outcome={ep.outcome!r} "
        f"status={ep.status} turns={ep.num_turns} format_errors={ep.format_errors} "
        f"tokens in/out={ep.tokens_in}/{ep.tokens_out} wall={ep.wall_time:.2f}s"
    )
    for i, t in enumerate(ep.turns):
        console.rule(f"turn {i} [{t.status}] {len(t.token_ids)} tokens")
        console.print("[dim]observation:[/]", t.observation, markup=True, highlight=False, soft_wrap=True)
        console.print("[dim]action:[/]", t.action, markup=True, highlight=False, soft_wrap=True)
        if t.tool_result:
            console.print("[dim]tool result:[/]", t.tool_result, markup=True, highlight=False, soft_wrap=True)


@app.command()
def query(
    sql: str = typer.Argument(..., help="SQL over the view `episodes`, e.g. \"SELECT harness_id, avg(success::INT) FROM episodes GROUP BY 1\"."),
    store: Path = StoreOption,
    limit: int = typer.Option(200, help="Rows to print."),
    csv: Path = typer.Option(None, help="Also write the result to this CSV file."),
) -> None:
    """Run SQL (DuckDB) over every committed shard."""
    with user_errors():
        result = _open(store).sql(sql)
    print_table(result, limit=limit)
    if csv:
        import pyarrow.csv as pacsv

        pacsv.write_csv(result, csv)


@app.command()
def verify(
    store: Path = StoreOption,
    drop_corrupt: bool = typer.Option(False, "--drop-corrupt", help="Remove corrupt shards from the manifest (their episodes are lost)."),
) -> None:
    """Check every shard's size and SHA-256 against the manifest; list crash leftovers."""
    with user_errors():
        s = _open(store, verify="none")
    problems = []
    with progress() as bar:
        task = bar.add_task("verifying shards", total=len(s.shards))
        for info in s.shards:
            try:
                s._check_shard(info, full=True)
            except CorruptShardError as err:
                problems.append(str(err))
            bar.advance(task)
    report = s.verify() if not problems else {"uncommitted": []}
    for p in problems:
        console.print(f"[red]CORRUPT[/] {p}", highlight=False, soft_wrap=True)
    for u in report["uncommitted"]:
        console.print(f"[yellow]uncommitted[/] {u} (left by a killed writer; safe to delete)", highlight=False, soft_wrap=True)
    if problems and drop_corrupt:
        dropped = s.drop_corrupt()
        console.print(f"dropped {len(dropped)} corrupt shards from the manifest")
        return
    if problems:
        raise typer.Exit(1)
    console.print(f"[green]ok[/] {len(s.shards)} shards, {s.count()} episodes verified")


@app.command()
def export(
    out: Path = typer.Argument(..., help="Output file: .jsonl or .parquet."),
    store: Path = StoreOption,
    where: str = typer.Option(None, help="SQL condition over `episodes`, e.g. \"harness_id = 'aider'\"."),
) -> None:
    """Export episodes to JSONL or to one Parquet file (pandas, polars, datasets read it)."""
    with user_errors():
        s = _open(store)
        if out.suffix == ".jsonl":
            n = s.export_jsonl(out, where)
        elif out.suffix == ".parquet":
            n = s.export_parquet(out, where)
        else:
            raise fail(f"{out}: unknown export format {out.suffix!r}; use .jsonl or .parquet")
    console.print(f"wrote {n} episodes to {out}")
