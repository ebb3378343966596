"""Bipartite episode graphs: which text did each turn read?

Nodes are *turns* (`turn:<episode>:<i>`, bipartite=0) and *texts* (bipartite=1):

    skill:<section id>        a section of the skill the episode ran with (shared across episodes)
    instruction:<episode>     the task message (turn 0's observation)
    obs:<episode>:<j>         the observation turn j saw (tool output), j >= 1
    file:<episode>:<path>     a workspace file a tool call named

The read rule. Turn i *read* text x — an edge (turn i, x) — iff x was IN CONTEXT at turn i
and at least one of these holds for the turn's action (its text plus the string values of
its parsed tool call, whitespace collapsed):

    quoted      the action and the text share a run of >= `quote_words` consecutive words
                (case-folded, surrounding punctuation stripped; default 8)
    referenced  the action names the text: a section's `[id]` or its id as a whole token
                (`[a-z0-9_-]` boundaries); a file's path, relative or as /app/<path>
    acted on    the *executed* tool-call arguments contain one of the text's code spans
                (backticked spans of >= `min_span_chars` characters; whitespace collapsed)
                or, for a file, its path

In context: skill sections and the instruction are in every turn's context (system prompt
and first message); obs j is in context at turns i >= j; a file is in context at turn i
when its path occurs in the instruction, the skill, or an observation 0..i. A turn that
writes a file no one showed it has no edge to it: writing is not reading.

Harnesses that collapse old observations (SWE-agent) make "in context" an over-estimate for
observations only; the rule never adds an edge without one of the three signals.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx

from harnessrl.episode import Episode
from harnessrl.harness.skills import Skill

EDGE_KINDS = ("quoted", "referenced", "acted_on")
_PUNCT = ".,;:!?()[]{}\"'`<>"
_PATH_KEYS = ("path", "file", "filename", "file_path", "target")
_PATH_IN_TEXT = re.compile(r"(?:/app/)?(?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_-][A-Za-z0-9_.-]*\.[A-Za-z]{1,5}\b")


@dataclass(frozen=True, slots=True)
class ReadRule:
    quote_words: int = 8
    min_span_chars: int = 4


@dataclass(frozen=True, slots=True)
class TextNode:
    node: str
    kind: str  # skill | instruction | obs | file
    label: str  # section id, "instruction", observation index, path
    text: str  # what can be quoted ("" for files)
    refs: tuple[str, ...] = ()  # names whose mention is a reference
    spans: tuple[str, ...] = ()  # code spans whose use in a tool call is acting on it
    since: int = 0  # first turn at which it is in context


# ---------------------------------------------------------------------------------------
# Matching primitives


def _norm(text: str) -> str:
    return " ".join(text.split())


def _words(text: str) -> list[str]:
    return [w for w in (t.strip(_PUNCT).lower() for t in text.split()) if w]


def shares_run(a: str, b: str, n: int) -> bool:
    """True iff a and b share n consecutive words (after case-folding and punctuation stripping)."""
    wa, wb = _words(a), _words(b)
    if len(wa) < n or len(wb) < n:
        return False
    grams = {tuple(wb[i:i + n]) for i in range(len(wb) - n + 1)}
    return any(tuple(wa[i:i + n]) in grams for i in range(len(wa) - n + 1))


def mentions(text: str, name: str) -> bool:
    """`name` occurs in text not glued to other identifier/path characters."""
    if not name:
        return False
    return re.search(r"(?<![A-Za-z0-9_/.-])" + re.escape(name) + r"(?![A-Za-z0-9_-])", text) is not None


def tool_strings(tool_call: str) -> list[str]:
    """Every string value inside a turn's tool-call JSON (the executed arguments)."""
    if not tool_call:
        return []
    try:
        data = json.loads(tool_call)
    except json.JSONDecodeError:
        return [tool_call]
    out: list[str] = []

    def walk(x: Any) -> None:
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(data.get("args", data) if isinstance(data, dict) else [c.get("args", c) if isinstance(c, dict) else c for c in data])
    return out


def tool_paths(tool_call: str) -> list[str]:
    """Workspace-relative paths a tool call names: file-ish argument keys, and paths inside commands."""
    if not tool_call:
        return []
    try:
        data = json.loads(tool_call)
    except json.JSONDecodeError:
        return []
    calls = data if isinstance(data, list) else [data]
    paths: list[str] = []
    for call in calls:
        args = call.get("args", {}) if isinstance(call, dict) else {}
        for key, value in args.items():
            if not isinstance(value, str):
                continue
            if key in _PATH_KEYS:
                paths.append(value)
            elif key in ("command", "cmd", "script", "keystrokes"):
                paths += _PATH_IN_TEXT.findall(value)
    return [p for p in dict.fromkeys(_rel(p) for p in paths) if p]


def _rel(path: str) -> str:
    path = path.strip()
    if path.startswith("/app/"):
        path = path[5:]
    return path.lstrip("./") if path.startswith("./") else path


# ---------------------------------------------------------------------------------------
# Text nodes and edges of one episode


def text_nodes(episode: Episode, skill: Skill | None) -> list[TextNode]:
    ep = episode.episode_id
    nodes: list[TextNode] = []
    if skill is not None:
        for s in skill.sections:
            nodes.append(TextNode(f"skill:{s.id}", "skill", s.id, s.text, refs=(f"[{s.id}]", s.id), spans=tuple(s.code_spans())))
    if episode.turns:
        instr = episode.turns[0].observation
        spans = tuple(re.findall(r"`([^`\n]+)`", instr))
        nodes.append(TextNode(f"instruction:{ep}", "instruction", "instruction", instr, spans=spans))
    for j, turn in enumerate(episode.turns[1:], 1):
        nodes.append(TextNode(f"obs:{ep}:{j}", "obs", str(j), turn.observation, since=j))
    # files: named by any tool call; in context from the first turn whose context shows the path
    context_texts = [(0, episode.turns[0].observation if episode.turns else "")]
    if skill is not None:
        context_texts.append((0, skill.render()))
    context_texts += [(j, t.observation) for j, t in enumerate(episode.turns[1:], 1)]
    seen: dict[str, None] = {}
    for t in episode.turns:
        for p in tool_paths(t.tool_call):
            seen.setdefault(p)
    for path in seen:
        shown = [j for j, text in context_texts if mentions(text, path) or mentions(text, "/app/" + path)]
        since = min(shown) if shown else len(episode.turns) + 1  # never in context
        nodes.append(TextNode(f"file:{ep}:{path}", "file", path, "", refs=(path, "/app/" + path), since=since))
    return nodes


def read_kinds(node: TextNode, action: str, tool_call: str, rule: ReadRule) -> list[str]:
    """Which of quoted / referenced / acted_on hold for one turn's action against one text."""
    executed = [_norm(s) for s in tool_strings(tool_call)]
    said = action + "\n" + "\n".join(executed)
    kinds = []
    if node.text and shares_run(said, node.text, rule.quote_words):
        kinds.append("quoted")
    if any(mentions(said, r) for r in node.refs):
        kinds.append("referenced")
    spans = [_norm(s) for s in node.spans if len(s.strip()) >= rule.min_span_chars]
    acted = any(sp in ex for sp in spans for ex in executed)
    if node.kind == "file":
        acted = node.label in tool_paths(tool_call)
    if acted:
        kinds.append("acted_on")
    return kinds


def read_edges(episode: Episode, skill: Skill | None, rule: ReadRule = ReadRule()) -> list[tuple[int, TextNode, list[str]]]:
    """(turn index, text node, kinds) for every edge of the read rule in one episode."""
    nodes = text_nodes(episode, skill)
    out = []
    for i, turn in enumerate(episode.turns):
        for node in nodes:
            if node.since > i:
                continue  # not in context yet
            kinds = read_kinds(node, turn.action, turn.tool_call, rule)
            if kinds:
                out.append((i, node, kinds))
    return out


# ---------------------------------------------------------------------------------------
# Graphs over episodes


def episode_graph(episodes: Iterable[Episode], skills: dict[str, Skill], rule: ReadRule = ReadRule()) -> nx.Graph:
    """One bipartite graph over many episodes; `skills` maps skill_version -> Skill.

    Skill-section nodes are shared (keyed by stable section id) so a section's degree counts
    its reads across the run; every other node belongs to one episode.
    """
    g = nx.Graph()
    for ep in episodes:
        skill = skills.get(ep.skill_version)
        for i, turn in enumerate(ep.turns):
            g.add_node(f"turn:{ep.episode_id}:{i}", bipartite=0, kind="turn", episode=ep.episode_id, index=i,
                       skill_version=ep.skill_version, action=turn.action[:500])
        for node in text_nodes(ep, skill):
            if node.node not in g:
                g.add_node(node.node, bipartite=1, kind=node.kind, label=node.label, text=node.text[:500],
                           episode="" if node.kind == "skill" else ep.episode_id)
        for i, node, kinds in read_edges(ep, skill, rule):
            g.add_edge(f"turn:{ep.episode_id}:{i}", node.node, kinds=",".join(kinds),
                       **{k: k in kinds for k in EDGE_KINDS})
    return g


def section_usage(episodes: Iterable[Episode], skills: dict[str, Skill], rule: ReadRule = ReadRule()) -> list[dict[str, Any]]:
    """Per skill section: in how many episodes it was in context, read, quoted, referenced, acted on."""
    stats: dict[str, dict[str, Any]] = defaultdict(lambda: {"in_context": 0, "read": 0, "quoted": 0, "referenced": 0, "acted_on": 0, "read_turns": 0})
    for ep in episodes:
        skill = skills.get(ep.skill_version)
        if skill is None:
            continue
        for sid in skill.section_ids:
            stats[sid]["in_context"] += 1
        per: dict[str, set[str]] = defaultdict(set)
        for _, node, kinds in read_edges(ep, skill, rule):
            if node.kind == "skill":
                per[node.label].update(kinds)
                stats[node.label]["read_turns"] += 1
        for sid, kinds in per.items():
            stats[sid]["read"] += 1
            for k in kinds:
                stats[sid][k] += 1
    return [{"section": sid, "episodes_in_context": s["in_context"], "episodes_read": s["read"],
             "episodes_quoted": s["quoted"], "episodes_referenced": s["referenced"], "episodes_acted_on": s["acted_on"],
             "turns_read": s["read_turns"], "read_share": s["read"] / s["in_context"] if s["in_context"] else 0.0}
            for sid, s in sorted(stats.items())]


def export_graph(g: nx.Graph, path: str | Path) -> Path:
    """Write `.graphml` (Gephi, yEd) or `.json` (networkx node-link) by suffix."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".graphml":
        nx.write_graphml(g, path)
    elif path.suffix == ".json":
        path.write_text(json.dumps(nx.node_link_data(g, edges="edges"), ensure_ascii=False, indent=1), encoding="utf-8")
    else:
        raise ValueError(f"graph export {path}: use a .graphml or .json suffix")
    return path
