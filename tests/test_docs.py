"""The docs a user reads: no internal paths or tracker numbers, links that resolve, and headline numbers
that are exactly the committed results file's."""

import json
import re
from pathlib import Path

import pytest

from harnessrl.recipes.study_results import aggregate, blocks, render

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
INTERNAL = [
    (r"shared/(seeds|DESIGN|ANCHORS|HARNESSES)|papers\.txt", "a file of the project's workspace"),
    (r"\bDESIGN\.md|\bANCHORS\b|\bHARNESSES\.md", "an internal design note"),
    (r"/work/", "a path on the developers' machine"),
    (r"\bissues?[- ]#?\d+|\bthe issue'?s\b", "a tracker issue"),
    (r"\bseed papers?\b", "an internal name for the papers (cite them: docs/papers.md)"),
]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_docs_have_no_internal_references(doc):
    text = doc.read_text(encoding="utf-8")
    for pattern, what in INTERNAL:
        for m in re.finditer(pattern, text):
            line = text.count("\n", 0, m.start()) + 1
            pytest.fail(f"{doc.name}:{line}: {m.group(0)!r} is {what}, which a user does not have")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_relative_links_resolve(doc):
    text = doc.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        assert (doc.parent / target).exists(), f"{doc.name}: link to {target} (no such file)"


def test_papers_page_cites_all_six_with_known_authors():
    text = (ROOT / "docs" / "papers.md").read_text(encoding="utf-8")
    for anchor in ("harness-preferences", "multi-harness", "agentic-coding", "bipa", "conditioned-critic", "reward-tilt"):
        assert f'id="{anchor}"' in text, anchor
    for author in ("Chenqian Le", "Sushant Mehta", "Zhenya Liu", "Jiaxuan Luo"):
        assert author in text


def test_study_headline_numbers_are_the_results_file():
    """README.md and docs/study.md print the study's headline only between study-results markers, rendered
    from docs/results/study.json; the file's mean and range are those of its own per-seed numbers."""
    results = json.loads((ROOT / "docs" / "results" / "study.json").read_text())
    assert len(results["seeds"]) >= 3
    assert aggregate(results["per_seed"], results["command"]) == results
    for doc, name in ((ROOT / "README.md", "readme"), (ROOT / "docs" / "study.md", "study")):
        found = blocks(doc.read_text(encoding="utf-8"))
        assert name in found, f"{doc.name}: no study-results:{name} block"
        assert found[name] == render(results, name), f"{doc.name}: out of date; run {results['command']} --no-run"
    for h in results["per_seed"]:  # each seed's line comes from its own run
        assert h["command"].startswith("harnessrl study") and f"seed={h['seed']}" in h["command"]
