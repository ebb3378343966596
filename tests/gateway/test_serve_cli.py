"""`harnessrl gateway serve`: a policy behind the gateway on loopback, driven by the openai client."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import openai


def test_serve_answers_with_the_policy_and_refuses_other_keys(tmp_path):
    replies = tmp_path / "r.jsonl"
    replies.write_text(json.dumps({"content": "first"}) + "\n")
    env = {**os.environ, "HARNESSRL_GATEWAY_KEY": "sk-debug"}
    proc = subprocess.Popen([sys.executable, "-m", "harnessrl.cli", "gateway", "serve", "--policy", f"replay:{replies}",
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        line = ""
        deadline = time.monotonic() + 60
        while "serving" not in line and time.monotonic() < deadline:
            line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/v1", line).group(0)
        out = openai.OpenAI(base_url=url, api_key="sk-debug").chat.completions.create(
            model="harnessrl-policy", messages=[{"role": "user", "content": "hi"}])
        assert out.choices[0].message.content == "first"
        try:
            openai.OpenAI(base_url=url, api_key="sk-other", max_retries=0).models.list()
            raise AssertionError("another key was served")
        except openai.AuthenticationError:
            pass
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_serve_without_a_key_is_a_one_line_error():
    env = {k: v for k, v in os.environ.items() if k != "HARNESSRL_GATEWAY_KEY"}
    r = subprocess.run([sys.executable, "-m", "harnessrl.cli", "gateway", "serve", "--policy", "noop"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and "error: --api-key-env HARNESSRL_GATEWAY_KEY" in r.stderr + r.stdout
