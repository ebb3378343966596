"""Each episode stores its whole conversation (system prompt first), `records export --format sft` writes it as
TRL SFT `messages` with no re-rendering, and stores written before record schema 2 stay readable."""

import json

import pyarrow.parquet as pq
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.episode import SCHEMA_V1
from harnessrl.records import RecordStore
from harnessrl.records.integrity import sha256_file
from harnessrl.records.manifest import MANIFEST
from tests.helpers import make_episode

runner = CliRunner()


def test_a_rollout_stores_its_conversation_and_exports_it_as_sft(tmp_path):
    store = tmp_path / "s"
    r = runner.invoke(app, ["eval", "--policy", "oracle", "--suite", "lookup", "--tasks", "0,1", "--harness",
                            "lookup-plain,lookup-kv", "--workers", "1", "--store", str(store)])
    assert r.exit_code == 0, r.output
    eps = RecordStore(store).episodes()
    assert len(eps) == 4
    for ep in eps:
        system = ep.messages[0]
        assert system["role"] == "system" and system["content"].strip()
        assert ep.messages[1]["role"] == "user" and ep.turns[0].observation in ep.messages[1]["content"]
        assert [m["content"] for m in ep.messages if m["role"] == "assistant"] == [t.action for t in ep.turns]
    out = tmp_path / "sft.jsonl"
    r = runner.invoke(app, ["records", "export", str(out), "--format", "sft", "--store", str(store), "--where", "success"])
    assert r.exit_code == 0, r.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == sum(ep.success for ep in eps) == 4
    stored = [ep.messages[:len(row["messages"])] for ep in eps for row in rows]
    for row in rows:
        assert set(row) == {"messages"} and row["messages"][-1]["role"] == "assistant"
        assert row["messages"] in stored  # exactly the stored conversation, not re-rendered


def _as_schema_1_store(root):
    """Rewrite a store as harnessrl with record schema 1 wrote it: shards without `messages`, header version 1."""
    store = RecordStore(root)
    lines = (root / MANIFEST).read_text().splitlines()
    header = json.loads(lines[0])
    header["schema_version"] = 1
    out = [json.dumps(header)]
    for line in lines[1:]:
        entry = json.loads(line)
        path = root / entry["file"]
        table = pq.read_table(path).drop_columns(["messages"]).cast(SCHEMA_V1)
        pq.write_table(table, path, compression="zstd")
        entry.update(bytes=path.stat().st_size, sha256=sha256_file(path), time=path.stat().st_mtime)
        out.append(json.dumps(entry))
    (root / MANIFEST).write_text("\n".join(out) + "\n")
    return store


def test_a_schema_1_store_stays_readable_and_takes_new_episodes(tmp_path):
    root = tmp_path / "old"
    RecordStore(root).append([make_episode(i) for i in range(3)])
    _as_schema_1_store(root)
    old = RecordStore(root, create=False)
    assert old.verify()["problems"] == []
    eps = old.episodes()
    assert len(eps) == 3 and all(ep.messages == [] for ep in eps)
    new = make_episode(9)
    new.messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "ok"}]
    old.append([new])
    again = {ep.episode_id: ep for ep in RecordStore(root, create=False).episodes()}
    assert len(again) == 4 and again[new.episode_id].messages == new.messages
    r = runner.invoke(app, ["records", "export", str(tmp_path / "sft.jsonl"), "--format", "sft", "--store", str(root)])
    assert r.exit_code == 0 and "skipped 3 episodes" in r.output, r.output
    assert [json.loads(x) for x in (tmp_path / "sft.jsonl").read_text().splitlines()] == [{"messages": new.messages}]
