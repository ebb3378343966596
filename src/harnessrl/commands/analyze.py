"""`harnessrl analyze RECORDS_OR_RUN`: ceiling, mismatch, decomposition, gain prediction and tilt tables.

RECORDS_OR_RUN is a record store folder, a folder holding one (`<dir>/store`), or a run id
inside the --store / default store. The reference policy's episodes define each harness's
ceilings; the evaluated policy's episodes its score and mismatch (ANCHORS §1).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import typer
from rich.table import Table

from harnessrl.commands.common import path_arg, StoreOption, check_writable_dir, console, default_store, fail, user_errors


def _resolve(target: str, store: Path | None) -> tuple[Path, str | None]:
    p = Path(target)
    if (p / "manifest.jsonl").exists():
        return p, None
    if (p / "store" / "manifest.jsonl").exists():
        return p / "store", None
    root = store or default_store()
    looks_like_path = p.exists() or "/" in target or target.startswith(".")
    if (root / "manifest.jsonl").exists() and not looks_like_path:
        return root, target
    raise fail(f"{target}: neither a record store (no manifest.jsonl) nor a run id in the store {root}. "
               "Pass a store folder, or a run id with --store.")


def _csv_list(text: str | None) -> list[str] | None:
    return [x.strip() for x in text.split(",") if x.strip()] if text else None


def _print(rows: list[dict], title: str, columns: list[str] | None = None) -> None:
    if not rows:
        return
    cols = columns or list(rows[0])
    t = Table(title=title, title_justify="left")
    for c in cols:
        t.add_column(c, justify="left" if isinstance(rows[0].get(c), str) else "right")
    for r in rows:
        t.add_row(*(f"{r[c]:.4g}" if isinstance(r.get(c), float) else str(r.get(c, "")) for c in cols))
    console.print(t)


def _ci_rows(rows: list[dict], quantities: list[str], keep: list[str]) -> list[dict]:
    """Fold value/lo/hi columns into one 'value [lo, hi]' text column per quantity."""
    out = []
    for r in rows:
        row = {k: r[k] for k in keep}
        for q in quantities:
            v = r[q]
            row[q] = "–" if v != v else f"{v:.3f}\n[{r[q + '_lo']:.3f},{r[q + '_hi']:.3f}]"
        out.append(row)
    return out


def _export(out: Path, name: str, rows: list[dict]) -> None:
    if not rows:
        return
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{name}.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def analyze(
    target: str = typer.Argument(..., metavar="RECORDS_OR_RUN", help="A record store folder, a folder with store/, or a run id."),
    harness: str | None = typer.Option(None, "--harness", "-H", help="Harnesses to compare, comma-separated (default: all); "
                                       "the decomposition goes from the first to each other."),
    beta: str = typer.Option("0.1", "--beta", "-b", help="KL coefficient(s) for soft ceilings and mismatch, comma-separated."),
    reference: str | None = typer.Option(None, "--reference", "-r", help="policy_id of the reference policy (default: the only policy)."),
    policy: str | None = typer.Option(None, "--policy", "-p", help="policy_id of the evaluated policy (default: the reference)."),
    after: str | None = typer.Option(None, "--after", help="policy_id after one more round of training: fit and validate gain prediction."),
    holdout: str | None = typer.Option(None, "--holdout", help="Held-out harness(es) for gain prediction (default: each in turn)."),
    k: int | None = typer.Option(None, "--k", min=1, help="k of the hard ceiling pass@k (default: min reference samples per cell)."),
    where: str | None = typer.Option(None, "--where", help="Extra SQL filter on the episodes, e.g. \"env_id = 'drawer'\"."),
    boot: int = typer.Option(1000, "--boot", min=10, help="Bootstrap resamples."),
    seed: int = typer.Option(0, "--seed"),
    out: Path | None = typer.Option(None, "--out", "-o", parser=path_arg, help="Also write every table as CSV (and summary.json) here."),
    store: Path | None = StoreOption,
) -> None:
    """Ceiling / score / headroom / mismatch per harness, the cross-harness decomposition, gain prediction and tilt."""
    from harnessrl.analysis.harness_tables import harness_tables
    from harnessrl.analysis.samples import Samples

    if out is not None:
        check_writable_dir(out, "--out")  # before minutes of bootstrap, not after
    if not target.strip():
        raise fail("RECORDS_OR_RUN is empty; give a record store folder, a folder with store/, or a run id")
    with user_errors():
        root, run_id = _resolve(target, store)
        clauses = [f"run_id = '{run_id.replace(chr(39), '')}'"] if run_id else []
        clauses += [f"({where})"] if where else []
        samples = Samples.from_store(root, where=" AND ".join(clauses) or None)
    if len(samples) == 0:
        raise fail(f"no episodes in {root}" + (f" for run {run_id}" if run_id else "") + (f" matching {where}" if where else ""))
    policies = samples.values("policy")
    if reference is None:
        if len(policies) > 1:
            raise fail(f"the records hold several policies {policies}; choose the reference with --reference")
        reference = policies[0]
    for name, pid in (("--reference", reference), ("--policy", policy), ("--after", after)):
        if pid is not None and pid not in policies:
            raise fail(f"{name} {pid!r}: no such policy_id; the records hold {policies}")
    try:
        betas = [float(b) for b in beta.split(",")]
    except ValueError:
        raise fail(f"--beta {beta!r}: give numbers, e.g. 0.1 or 0.05,0.2") from None
    harnesses = _csv_list(harness)
    summary: dict = {"store": str(root), "run_id": run_id, "reference": reference, "policy": policy or reference}
    try:
        res = harness_tables(samples, reference=reference, policy=policy, betas=betas, harnesses=harnesses, after=after,
                             holdout=_csv_list(holdout), k=k, n_boot=boot, seed=seed)
    except ValueError as err:
        raise fail(str(err)) from None
    tables = res.tables
    _print_tables(res, reference, policy, after)
    if out:
        with user_errors():
            for name, rows in tables.items():
                _export(out, name, rows)
            summary["tables"] = sorted(tables)
            (out / "summary.json").write_text(json.dumps(summary, indent=2, default=lambda o: o.item() if isinstance(o, np.generic) else str(o)))
        console.print(f"tables -> {out}")


def _print_tables(res, reference: str, policy: str | None, after: str | None) -> None:
    """The tables of analysis.harness_tables on the console, values with their 95% CIs."""
    tables = res.tables
    for bt in res.per_beta:
        b = bt.beta
        shown = _ci_rows(bt.rows, ["hard_ceiling", "soft_ceiling", "score", "headroom", "kl_ref", "mismatch"], ["harness", "tasks"])
        short = {"hard_ceiling": f"C (pass@{bt.k})", "soft_ceiling": "V*", "score": "S", "headroom": "G = C - S",
                 "kl_ref": "KL(pi||ref)", "mismatch": "M = KL(pi||pi*)"}
        _print([{short.get(key, key): v for key, v in r.items()} for r in shown],
               f"beta={b:g}: reference {reference!r}, policy {policy or reference!r}  (value [95% CI])")
        for other, dec in bt.decompositions:
            _print([{"term": d["term"], "value": d["value"], "95% CI": f"[{d['lo']:.3f}, {d['hi']:.3f}]"} for d in dec],
                   f"{bt.harnesses[0]} -> {other}: dS = dC - dG;  dJ = dV* - beta dM  (beta={b:g})")
    if after:
        _print([{"held out": g["harness"], "fit on": g["fit_on"], "kappa": f"{g['kappa']:.3f}\n[{g['kappa_lo']:.3f},{g['kappa_hi']:.3f}]",
                 "headroom G": g["headroom"],
                 "predicted dS": f"{g['predicted_gain']:.3f}\n[{g['predicted_lo']:.3f},{g['predicted_hi']:.3f}]",
                 "observed dS": f"{g['observed_gain']:.3f}\n[{g['observed_lo']:.3f},{g['observed_hi']:.3f}]",
                 "error": f"{g['error']:.3f}\n[{g['error_lo']:.3f},{g['error_hi']:.3f}]"}
                for g in tables.get("gain_prediction", [])],
               f"gain prediction dS = kappa (C - S): {policy or reference!r} -> {after!r} (95% CI)")
    labels = res.outcome_labels
    if labels:
        trows = tables["outcomes"]
        policies = list(dict.fromkeys(r["policy"] for r in trows))
        _print([{"policy": pid, **{lab: next(f"{r['frequency']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}]" for r in trows
                                         if r["policy"] == pid and r["outcome"] == lab) for lab in labels}} for pid in policies],
               "outcome frequencies per policy (95% Wilson CI)")
        _print([{**r, "95% CI": f"[{r['predicted_lo']:.3f}, {r['predicted_hi']:.3f}]"} for r in tables["tilt"]],
               f"tilt model from {reference!r}'s samples: predicted outcome frequencies", ["reward", "beta", "outcome", "base", "predicted", "95% CI"])
