"""Fuzz every harness parser with hostile model replies; exit 1 if any parser crashes or stalls.

    python scripts/fuzz_parsers.py                      # 10,000 replies per parser (about a minute per parser on a busy laptop)
    python scripts/fuzz_parsers.py --cases 50000 --seed 7 --parsers openhands qwen_code

Each reply (hypothesis strategies of tests/harness/hostile_replies.py: random text, fragments of
the harness's own syntax, deep nesting, huge and non-finite numbers, repeated runs) goes to the
parser, which must return tool calls or a FormatError that is not a caught crash, within
--max-seconds of CPU time (not wall-clock, so a busy machine does not count). Then the 100 kB adversarial shapes of the same module are timed. The summary
counts, per parser: replies, how many parsed to calls, crashes (exceptions, caught or not),
slow replies, and the slowest times. Documented in docs/parsers.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.harness.hostile_replies: the strategies the test suite uses

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.markup import escape  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: E402
from rich.table import Table  # noqa: E402

from harnessrl.harness.base import FormatError  # noqa: E402
from tests.harness.hostile_replies import PARSERS, adversarial, harness_for, replies  # noqa: E402


@dataclass
class Tally:
    cases: int = 0
    calls: int = 0
    crashes: list[str] = field(default_factory=list)  # "<exception>: <reply prefix>"
    slow: list[str] = field(default_factory=list)
    slowest_s: float = 0.0
    adversarial_s: float = 0.0

    def check(self, harness, text: str, max_seconds: float, count: bool = True) -> float:
        t0 = time.process_time()
        try:
            out = harness.parse(text)
            problem = out.crash if isinstance(out, FormatError) else ("" if isinstance(out, list) else f"returned {type(out).__name__}")
        except Exception as err:  # noqa: BLE001 - counting crashes is the point
            out, problem = None, f"{type(err).__name__} escaped"
        elapsed = time.process_time() - t0
        sample = repr(text[:120]) + (f"... ({len(text):,} characters)" if len(text) > 120 else "")
        if problem:
            self.crashes.append(f"{problem}: {sample}")
        if elapsed > max_seconds:
            self.slow.append(f"{elapsed:.2f} s: {sample}")
        if count:
            self.cases += 1
            self.calls += isinstance(out, list)
            self.slowest_s = max(self.slowest_s, elapsed)
        return elapsed


def fuzz(name: str, cases: int, seed_value: int, max_seconds: float, advance) -> Tally:
    harness, tally = harness_for(name), Tally()

    @seed(seed_value)
    @settings(max_examples=cases, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(replies(name))
    def run(text):
        tally.check(harness, text, max_seconds)
        advance()

    run()
    return tally


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=10_000, help="hostile replies per parser (default 10,000)")
    ap.add_argument("--parsers", nargs="+", default=PARSERS, choices=PARSERS, metavar="HARNESS",
                    help=f"which parsers (default all: {', '.join(PARSERS)})")
    ap.add_argument("--seed", type=int, default=0, help="hypothesis seed (same seed, same replies)")
    ap.add_argument("--max-seconds", type=float, default=1.0, help="a reply taking more CPU seconds than this to parse is a failure")
    ap.add_argument("--adversarial-size", type=int, default=100_000, help="characters of each adversarial shape")
    args = ap.parse_args(argv)
    if args.cases < 1:
        print("error: --cases must be at least 1", file=sys.stderr)
        return 2

    console = Console()
    shapes = adversarial(args.adversarial_size)
    tallies: dict[str, Tally] = {}
    columns = (TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        for name in args.parsers:
            task = progress.add_task(name, total=args.cases)
            tally = fuzz(name, args.cases, args.seed, args.max_seconds, lambda t=task: progress.advance(t))
            harness = harness_for(name)
            for _, text in shapes[name]:
                tally.adversarial_s = max(tally.adversarial_s, tally.check(harness, text, args.max_seconds, count=False))
            tallies[name] = tally
            progress.update(task, completed=args.cases)

    table = Table(title=f"parser fuzzing: {args.cases:,} replies per parser, seed {args.seed}")
    for col in ("parser", "replies", "to calls", "crashes", "slow", "slowest reply", f"slowest {args.adversarial_size // 1000} kB shape"):
        table.add_column(col, justify="left" if col == "parser" else "right")
    for name, t in tallies.items():
        table.add_row(name, f"{t.cases:,}", f"{t.calls:,}", str(len(t.crashes)), str(len(t.slow)),
                      f"{t.slowest_s * 1000:.1f} ms", f"{t.adversarial_s * 1000:.1f} ms")
    console.print(table)
    failed = {n: t for n, t in tallies.items() if t.crashes or t.slow or t.cases < args.cases}
    for name, t in failed.items():
        if t.cases < args.cases:
            console.print(f"[red]{name}: only {t.cases} of {args.cases} replies were generated")
        for line in (t.crashes + t.slow)[:5]:
            console.print(f"[red]{name}[/red] {escape(line)}", highlight=False)
    if failed:
        console.print(f"[red]FAILED: {', '.join(failed)}")
        return 1
    console.print(f"[green]OK: {len(tallies)} parsers, {sum(t.cases for t in tallies.values()):,} replies, "
                  "no crash, none slower than {:.1f} s".format(args.max_seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
