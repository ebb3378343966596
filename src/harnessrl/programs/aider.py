"""Aider 0.86.2 (pip `aider-chat`), non-interactive, `diff` edit format (SEARCH/REPLACE blocks), no git.

The program gets the task as its one message (`--message-file`), the workspace's files added
to its chat; it sends one request, applies the blocks of the reply, lints the files it edited
and, when a block fails or lint finds errors, sends up to three reflections before it exits
(its own control logic, unchanged). It never runs shell commands, so tasks that need a shell
are out of its scope. Its tool table writes every edit of a plan as SEARCH/REPLACE blocks in
the first reply (Aider takes one reply, then reflections), through the renderer of the Aider
reconstruction (harness/aider_reconstruction.py), with paths named from Aider's root.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harnessrl.programs.base import STATE, WORKDIR, InstalledLike, Launch, Program, ToolTable, builtin_lock, write_input

MAX_CHAT_FILES = 64  # files added to the chat; a larger workspace is cut (the model can still name others)


def chat_files(files: list[str]) -> dict[str, Any]:
    """The episode's launch option: the workspace's files (not dotfiles) added to the chat."""
    return {"files": [p for p in files if not p.startswith(".")][:MAX_CHAT_FILES]}


def root(files: Sequence[str] | None) -> str:
    """Aider's root for these chat files: without git, the common folder of the files in its chat
    (aider.utils.find_common_root); an edit block's path is relative to it (/app/plugins when every
    file is under plugins/)."""
    absolute = [posixpath.join(WORKDIR, f) for f in files or ()]
    if len(absolute) == 1:
        return posixpath.dirname(absolute[0])
    return posixpath.commonpath(absolute) if absolute else WORKDIR


def launch(prog: InstalledLike, state: Path, *, task: str, base_url: str, api_key: str, model: str,
           files: Sequence[str] = (), stream: bool = True, context_window: int = 8192,
           max_output_tokens: int = 2048, timeout_s: int = 600) -> Launch:
    message = write_input(state, "message.md", task)
    full = f"openai/{model}"
    # a local model-metadata file: without it aider downloads litellm's price list
    meta = {full: {"max_input_tokens": context_window, "max_output_tokens": max_output_tokens,
                   "max_tokens": max_output_tokens, "input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
                   "litellm_provider": "openai", "mode": "chat"}}
    metadata = write_input(state, "model-metadata.json", json.dumps(meta))
    conf = write_input(state, "aider.conf.yml", "{}\n")  # an empty mapping: the only config it reads
    argv = [str(prog.executable), "--model", full, "--openai-api-base", base_url, "--openai-api-key", api_key,
            "--edit-format", "diff", "--message-file", message, "--yes-always",
            "--no-git", "--no-auto-commits", "--no-dirty-commits", "--no-gitignore",
            "--analytics-disable", "--no-check-update", "--no-show-release-notes", "--no-show-model-warnings",
            "--no-detect-urls", "--disable-playwright", "--no-suggest-shell-commands", "--no-fancy-input",
            "--no-pretty", "--map-tokens", "0", "--encoding", "utf-8", "--timeout", str(timeout_s),
            "--config", conf, "--env-file", f"{STATE}/aider.env", "--model-metadata-file", metadata,
            "--input-history-file", f"{STATE}/input.history", "--chat-history-file", f"{STATE}/chat.history.md",
            "--llm-history-file", f"{STATE}/llm.history",
            *([] if stream else ["--no-stream"]), *files]
    return argv, {"AIDER_ANALYTICS": "false", "AIDER_CHECK_UPDATE": "false"}, {
        "chat_history": f"{STATE}/chat.history.md", "llm_history": f"{STATE}/llm.history"}


TOOLS = ToolTable(wire="search_replace", tools={"edit": frozenset({"edit"})})

PROGRAM = Program(
    name="aider-cli", package="aider-chat", version="0.86.2", kind="pip", entry="aider", protocol="text",
    python="3.11", style="aider_cli", launch=launch, tools=TOOLS, lock=builtin_lock("aider-cli", "pip"),
    session_options=chat_files,
    description="Aider, non-interactive (--message-file), diff edit format (SEARCH/REPLACE blocks), no git")
