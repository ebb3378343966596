"""The default study's headline over several seeds: one results file, and the text every doc prints from it.

    python scripts/study_results.py --seeds 0 1 2        # runs (or reuses) one study per seed, then:
    results = aggregate([json.loads(p.read_text()) for p in headline_files])   # mean and range per number
    block = render(results, "readme")                    # the text between the markers in README.md

Every headline number in README.md and docs/study.md sits between `<!-- study-results:NAME -->` and
`<!-- /study-results:NAME -->` and is written by `render` from docs/results/study.json; the tests render
again and compare, so a doc can only print what the file holds.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

#: the per-seed numbers (from each run's headline.json) that are averaged; the rest are listed per seed
NUMBERS = ("train_score", "train_ceiling", "worst_score", "worst_dS", "worst_dC", "worst_dG", "kappa",
           "predicted_gain", "observed_gain", "sealed_reference", "sealed_agent")
NAMES = ("worst_harness", "chosen", "sealed_harness", "train_harness")
MARK = re.compile(r"(<!-- study-results:(\w+) -->\n)(.*?)(<!-- /study-results:\2 -->)", re.S)


def aggregate(headlines: list[dict[str, Any]], command: str = "") -> dict[str, Any]:
    """{"seeds", "command", "per_seed": [...], "mean": {k}, "min": {k}, "max": {k}, "names": {k: [per seed]}}."""
    if not headlines:
        raise ValueError("no study headlines to aggregate")
    per_seed = sorted(headlines, key=lambda h: h["seed"])
    out: dict[str, Any] = {"seeds": [h["seed"] for h in per_seed], "command": command, "per_seed": per_seed,
                           "mean": {}, "min": {}, "max": {}, "names": {}}
    for key in NUMBERS:
        values = [h[key] for h in per_seed if h.get(key) is not None]
        if values:
            out["mean"][key] = sum(values) / len(values)
            out["min"][key], out["max"][key] = min(values), max(values)
    for key in NAMES:
        out["names"][key] = [h.get(key) for h in per_seed]
    return out


def _short(h: str | None) -> str:
    return (h or "?").split("-", 1)[1] if (h or "").startswith("lookup-") else (h or "?")


def _v(r: dict, key: str, fmt: str = "{:.3f}", sign: bool = False) -> str:
    """`mean (range lo to hi)` of one number, as every doc prints it."""
    f = fmt.replace("{:", "{:+") if sign else fmt
    return f"{f.format(r['mean'][key])} (range {f.format(r['min'][key])} to {f.format(r['max'][key])})"


def _names(r: dict, key: str) -> str:
    names = [_short(n) for n in r["names"][key]]
    return ", ".join(f"`{n}`" for n in names)


def render(r: dict, name: str) -> str:
    """The text of the block `name` (readme | study) from the results `r`; ends with a newline."""
    n = len(r["seeds"])
    common = (f"Over {n} seeds ({', '.join(map(str, r['seeds']))}) of the default study, mean (range): the agent scores "
              f"{_v(r, 'train_score')} in its training harness `{_short(r['names']['train_harness'][0])}`. ")
    if name == "readme":
        return (common + f"In the hardest other harness (per seed: {_names(r, 'worst_harness')}) its score changes by "
                f"{_v(r, 'worst_dS', sign=True)} = ceiling change {_v(r, 'worst_dC', sign=True)} minus headroom change "
                f"{_v(r, 'worst_dG', sign=True)}. Further training where the predicted gain was highest (per seed: "
                f"{_names(r, 'chosen')}) gained {_v(r, 'observed_gain', sign=True)} against a predicted "
                f"{_v(r, 'predicted_gain', sign=True)}. Numbers from `{r['command']}` "
                "([docs/results/study.json](docs/results/study.json)).\n")
    if name == "study":
        rows = ["| seed | agent score (train) | hardest other harness: dS = dC - dG | chosen: predicted / observed gain "
                "| kappa | sealed: reference / agent |", "|---|---|---|---|---|---|"]
        for h in r["per_seed"]:
            rows.append(f"| {h['seed']} | {h['train_score']:.3f} | `{_short(h.get('worst_harness'))}`: dS {h['worst_dS']:+.3f} = "
                        f"dC {h['worst_dC']:+.3f} - dG {h['worst_dG']:+.3f} | `{_short(h['chosen'])}`: {h['predicted_gain']:+.3f} "
                        f"[{h['predicted_lo']:+.3f}, {h['predicted_hi']:+.3f}] / {h['observed_gain']:+.3f} "
                        f"[{h['observed_lo']:+.3f}, {h['observed_hi']:+.3f}] | {h['kappa']:.2f} | "
                        f"{h['sealed_reference']:.3f} / {h['sealed_agent']:.3f} |")
        return (common + f"Predicted gain {_v(r, 'predicted_gain', sign=True)}, observed {_v(r, 'observed_gain', sign=True)}; "
                f"kappa {_v(r, 'kappa', '{:.2f}')}; sealed `{_short(r['names']['sealed_harness'][0])}`: reference "
                f"{_v(r, 'sealed_reference')}, agent {_v(r, 'sealed_agent')}.\n\n" + "\n".join(rows) + "\n\n"
                f"Written by `{r['command']}` into `docs/results/study.json` (each seed's numbers are its "
                "`report.html` headline; brackets: 95% bootstrap intervals within a seed).\n")
    raise ValueError(f"unknown block {name!r}")


def blocks(text: str) -> dict[str, str]:
    """{block name: its current text} of a doc."""
    return {m.group(2): m.group(3) for m in MARK.finditer(text)}


def fill(text: str, results: dict) -> str:
    """`text` with every study-results block rendered again from `results`."""
    return MARK.sub(lambda m: m.group(1) + render(results, m.group(2)) + m.group(4), text)


def update_docs(results: dict, paths: list[Path]) -> list[Path]:
    """Rewrite the blocks in `paths`; the paths that changed."""
    changed = []
    for path in paths:
        old = path.read_text(encoding="utf-8")
        new = fill(old, results)
        if new != old:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed
