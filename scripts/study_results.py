"""The default study over several seeds -> docs/results/study.json -> the headline numbers in README.md and
docs/study.md (rewritten between their `<!-- study-results:NAME -->` markers).

    python scripts/study_results.py --seeds 0 1 2                 # ~4 min a seed on 2 quiet cores
    python scripts/study_results.py --seeds 0 1 2 --no-run        # only aggregate finished runs and rewrite the docs

Each seed runs `harnessrl study --set seed=S --out RUNS/seedS --resume` (a finished study is reused, so a
second call only re-reads the runs)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from harnessrl.recipes.study_results import aggregate, update_docs

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--runs", type=Path, default=Path("runs/study-seeds"), help="One study folder per seed in here.")
    ap.add_argument("--results", type=Path, default=ROOT / "docs" / "results" / "study.json")
    ap.add_argument("--no-run", action="store_true", help="Do not run studies; read the finished ones.")
    args = ap.parse_args()
    if len(args.seeds) < 3:
        ap.error("give at least 3 seeds: the docs print a mean and a range")
    for seed in args.seeds:
        out = args.runs / f"seed{seed}"
        if not args.no_run:
            subprocess.run([sys.executable, "-m", "harnessrl.cli", "study", "--set", f"seed={seed}", "--out", str(out),
                            "--resume"], check=True)
        if not (out / "headline.json").is_file():
            sys.exit(f"error: {out / 'headline.json'} is missing; run without --no-run first")
    headlines = [json.loads((args.runs / f"seed{s}" / "headline.json").read_text()) for s in args.seeds]
    command = f"python scripts/study_results.py --seeds {' '.join(map(str, args.seeds))}"
    results = aggregate(headlines, command)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    changed = update_docs(results, [ROOT / "README.md", ROOT / "docs" / "study.md"])
    print(f"wrote {args.results}; rewrote {', '.join(map(str, changed)) or 'nothing (docs already current)'}")


if __name__ == "__main__":
    main()
