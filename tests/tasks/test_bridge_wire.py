"""The bridge's trusted side decodes only data: anything the agent's child sends is a value of a closed
set of types, an opaque handle, or AgentBridgeError — never another exception, never code run."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessrl.tasks import grader_bridge as gb
from harnessrl.tasks import grader_values


@pytest.fixture(autouse=True)
def bridge(monkeypatch):
    channel = gb._Bridge(["python"], ["/app"], ["/usr"], "/tests")  # no child: decoding only
    monkeypatch.setattr(gb, "_bridge", channel)
    monkeypatch.setattr(grader_values, "CHANNEL", channel)


TAGS = ["l", "t", "S", "F", "d", "O", "C", "f", "I", "B", "A", "c", "R", "E", "Q", "x", "p", "r", "a", "z", ""]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=4), kids, max_size=3)
    | st.tuples(st.sampled_from(TAGS), kids).map(list) | st.tuples(st.sampled_from(TAGS), kids, kids).map(list),
    max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_decoding_anything_is_a_value_or_a_bridge_error(x):
    try:
        gb._decode(x)
    except gb.AgentBridgeError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["ok", "exc", "cb", "zz", 1]), json_values, json_values)
def test_any_reply_is_a_value_the_agents_exception_or_a_bridge_error(kind, a, b):
    """A reply as the request loop handles it: the answer, an exception of the agent's (raised as such),
    or AgentBridgeError; never a stray AttributeError or TypeError that a test could be expecting."""
    reply = [kind, a, "", "", b, []] if kind == "ok" else [kind, a, "", "", []]
    try:
        gb._bridge._answer(("call", (), {}), reply)
    except gb.AgentBridgeError:
        pass


def test_round_trip_of_the_value_types():
    values = {"l": ["l", [1, ["f", (2.5).hex()], "s", None, True], 7], "t": ["t", [1, 2]], "S": ["S", [1]],
              "d": ["d", [[1, ["t", [2]]]], 8], "B": ["B", "eA=="], "I": ["I", hex(1 << 70)],
              "x": ["x", "Fraction", ["1", "3"]], "R": ["R", 0, 5, 2]}
    got = {k: gb._decode(json.loads(json.dumps(v))) for k, v in values.items()}
    assert got["l"] == [1, 2.5, "s", None, True] and isinstance(got["l"], list)
    assert got["t"] == (1, 2) and got["S"] == {1} and got["d"] == {1: (2,)} and got["B"] == b"x"
    assert got["I"] == 1 << 70 and str(got["x"]) == "1/3" and got["R"] == range(0, 5, 2)
    again = gb._decode(["l", [3], 7])
    assert again is got["l"] and again == [3]  # the same agent list is the same local object, refreshed


def test_a_breach_is_a_base_exception_that_except_exception_cannot_swallow():
    assert issubclass(gb.AgentBridgeError, BaseException) and not issubclass(gb.AgentBridgeError, Exception)
    for bad in (["r", "x", "y", "z", {}], ["p", 99], ["zz"], ["x", "os.system", "ls"], [1, 2], ["f", "nope"],
                {"a": 1}, ["E", 1, 2, 3, 4, 5]):
        try:
            gb._decode(bad)
        except gb.AgentBridgeError:
            continue
        except Exception as err:  # noqa: BLE001
            pytest.fail(f"{bad!r} raised {type(err).__name__}, not AgentBridgeError")
