"""The read rule on hand-built episodes: each clause alone makes an edge, nothing else does."""

import json

import networkx as nx
import pytest

from harnessrl.analysis.bipa_graph import (
    ReadRule, episode_graph, export_graph, read_edges, section_usage, shares_run, tool_paths,
)
from harnessrl.episode import Context, Episode, Turn
from harnessrl.harness.skills import Skill, SkillSection

SKILL = Skill("s", (
    SkillSection("run-tests", "Run the tests", "Run `python -m pytest -q` after every single edit you make to the code."),
    SkillSection("inspect", "Look around", "Start with `ls -la /app` to see which files exist before touching anything."),
    SkillSection("explain", "Explain", "Write a short note that explains why the fix works for every caller."),
))


def call(name, **args):
    return json.dumps([{"name": name, "args": args}])


def episode(*turns, skill=SKILL, instruction="Fix the bug in calc.py so that add returns the sum."):
    ts = [Turn(observation=instruction if i == 0 else obs, action=act, tool_call=tc)
          for i, (obs, act, tc) in enumerate(turns)]
    return Episode(context=Context(task_id="t", harness_id="h"), turns=ts, skill_version=skill.version if skill else "")


def edges(ep, skill=SKILL):
    return {(i, n.node.split(":", 2)[0] + ":" + n.label, tuple(k)) for i, n, k in read_edges(ep, skill)}


def test_acted_on_needs_the_code_span_in_the_executed_call():
    ep = episode(("", "running tests", call("bash", command="python -m pytest -q")))
    assert edges(ep) == {(0, "skill:run-tests", ("acted_on",))}
    # the same span only in prose (not executed) is not acting on it
    ep = episode(("", "I could run python -m pytest -q later", call("bash", command="echo hi")))
    assert edges(ep) == set()
    # whitespace differences do not matter
    ep = episode(("", "", call("bash", command="python  -m   pytest -q")))
    assert edges(ep) == {(0, "skill:run-tests", ("acted_on",))}


def test_referenced_by_id_and_quoted_by_word_run():
    ep = episode(("", "Following [inspect] now.", call("bash", command="echo x")))
    assert edges(ep) == {(0, "skill:inspect", ("referenced",))}
    quote = "as advised: write a short note that explains why the fix works"
    ep = episode(("", quote, call("bash", command="echo x")))
    assert edges(ep) == {(0, "skill:explain", ("quoted",))}
    # seven shared words is below the 8-word threshold; a looser rule accepts it
    short = "write a short note that explains why"
    assert not shares_run(short, SKILL.section("explain").text, 8) and shares_run(short, SKILL.section("explain").text, 7)
    assert read_edges(episode(("", short, "")), SKILL, ReadRule(quote_words=7))
    assert not read_edges(episode(("", short, "")), SKILL)
    # an id glued into a longer identifier is not a reference
    assert edges(episode(("", "see inspector_tool", call("bash", command="echo")))) == set()


def test_not_in_context_means_no_edge():
    other = Skill("s", SKILL.sections[:1])  # this episode's skill lacks `inspect`
    ep = episode(("", "[inspect]", call("bash", command="ls -la /app")), skill=other)
    assert edges(ep, other) == set()
    # observations enter the context only from their own turn on
    long_err = "AssertionError: expected the value three but the function returned four instead"
    ep = episode(("", "x", call("bash", command="echo")),
                 (long_err, "the error says: expected the value three but the function returned four", call("bash", command="echo")))
    got = edges(ep)
    assert (1, "obs:1", ("quoted",)) in got and not any(i == 0 and n.startswith("obs") for i, n, _ in got)


def test_files_are_read_only_when_shown():
    # calc.py is named in the instruction -> in context; new.py was never shown -> writing it is not reading it
    ep = episode(("", "", call("str_replace_editor", command="view", path="/app/calc.py")),
                 ("file contents", "", call("create", path="new.py", file_text="x = 1\n")))
    got = edges(ep)
    assert (0, "file:calc.py", ("referenced", "acted_on")) in got
    assert not any(n == "file:new.py" for _, n, _ in got)
    assert tool_paths(call("bash", command="cat src/util.py && python -m pytest -q")) == ["src/util.py"]


def test_graph_is_bipartite_and_exports(tmp_path):
    eps = [episode(("", "", call("bash", command="python -m pytest -q")), ("ok", "[run-tests] again", call("bash", command="python -m pytest -q")))
           for _ in range(2)]
    g = episode_graph(eps, {SKILL.version: SKILL})
    turns = {n for n, d in g.nodes(data=True) if d["bipartite"] == 0}
    assert nx.is_bipartite(g) and len(turns) == 4
    assert g.degree("skill:run-tests") == 4 and g.degree("skill:inspect") == 0
    usage = {r["section"]: r for r in section_usage(eps, {SKILL.version: SKILL})}
    assert usage["run-tests"]["episodes_acted_on"] == 2 and usage["run-tests"]["episodes_referenced"] == 2
    assert usage["inspect"]["episodes_read"] == 0 and usage["inspect"]["episodes_in_context"] == 2
    for suffix in (".graphml", ".json"):
        path = export_graph(g, tmp_path / f"g{suffix}")
        back = nx.read_graphml(path) if suffix == ".graphml" else nx.node_link_graph(json.loads(path.read_text()), edges="edges")
        assert back.number_of_edges() == g.number_of_edges() and back.number_of_nodes() == g.number_of_nodes()
    with pytest.raises(ValueError, match="graphml or .json"):
        export_graph(g, tmp_path / "g.txt")
