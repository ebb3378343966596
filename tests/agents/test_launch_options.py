"""What a program's launch writes for one episode, from its spec's options (no program runs: a
stand-in install). The 8k Qwen Code spec reaches the program only through its own settings file,
flags and QWEN_SYSTEM_MD."""

from __future__ import annotations

import json
import warnings

from harnessrl.agents.launch import launch_spec
from harnessrl.harness.base import load_spec
from harnessrl.tasks.sandbox import Limits, Sandbox
from harnessrl.tasks.workspace import Workspace

from .test_install import agents_dir, fake_install  # noqa: F401  (the fixture)


def test_the_8k_qwen_spec_configures_the_program_through_its_settings(agents_dir):  # noqa: F811
    fake_install("qwen-code-cli")
    options = dict(load_spec("qwen-code-cli-8k").options["launch"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sandbox = Sandbox(Limits(), unsafe=True, bwrap="/nonexistent")
    with Workspace.create(None, quota_mb=16) as ws:
        spec = launch_spec("qwen-code-cli", ws, sandbox, task="Fix it.", base_url="http://127.0.0.1:1/v1",
                           api_key="k", model="m", **options)
        settings = json.loads((spec.state_dir / "home" / ".qwen" / "settings.json").read_text())
        system = (spec.state_dir / "system.md").read_text()
    argv = list(spec.argv)
    assert argv[1] == "Fix it." and argv[argv.index("--core-tools") + 1] == "read_file,edit,write_file,run_shell_command"
    assert "agent" in argv[argv.index("--exclude-tools") + 1].split(",")
    assert spec.env["QWEN_SYSTEM_MD"] == "/agent/system.md" and "/app" in system
    # the spec's settings are merged over the launch's own, which stay (model, telemetry, auth)
    assert settings["model"] == {"name": "m", "skipStartupContext": True, "generationConfig": {"contextWindowSize": 8192}}
    assert settings["skills"]["disabledLevels"] == ["project", "user", "extension", "bundled"]
    assert settings["telemetry"] == {"enabled": False} and settings["memory"] == {"enableManagedAutoMemory": False}
    assert settings["security"]["auth"]["selectedType"] == "openai"


def test_the_default_qwen_launch_keeps_the_programs_own_prompt_and_tools(agents_dir):  # noqa: F811
    fake_install("qwen-code-cli")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sandbox = Sandbox(Limits(), unsafe=True, bwrap="/nonexistent")
    with Workspace.create(None, quota_mb=16) as ws:
        spec = launch_spec("qwen-code-cli", ws, sandbox, task="-x starts like a flag", base_url="http://h/v1",
                           api_key="k", model="m", **dict(load_spec("qwen-code-cli").options["launch"]))
    assert "QWEN_SYSTEM_MD" not in spec.env and "--core-tools" not in spec.argv and "--exclude-tools" not in spec.argv
    assert spec.argv[1] == "--prompt=-x starts like a flag"


def test_the_opencode_launch_configures_one_provider_and_gives_the_task_on_stdin(agents_dir):  # noqa: F811
    fake_install("opencode-cli")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sandbox = Sandbox(Limits(), unsafe=True, bwrap="/nonexistent")
    task = 'Fix "it".\nThen the tests.'
    with Workspace.create(None, quota_mb=16) as ws:
        spec = launch_spec("opencode-cli", ws, sandbox, task=task, base_url="http://127.0.0.1:9/v1/", api_key="sk-e",
                           model="m", max_output_tokens=512, config={"permission": {"webfetch": "allow"}})
        config = json.loads((spec.state_dir / "opencode.json").read_text())
        given = (spec.state_dir / "task.md").read_text()
    # the task verbatim in a file piped to stdin, never an argument (the program quotes arguments)
    assert given == task and task not in " ".join(spec.argv)
    assert spec.argv[:3] == ("/bin/sh", "-c", 'exec "$0" "$@" < /agent/task.md')
    assert spec.argv[3].endswith("node_modules/.bin/opencode")
    assert list(spec.argv[4:]) == ["run", "--title", "episode", "--auto", "--model", "harnessrl/m"]
    assert spec.env["OPENCODE_CONFIG"] == "/agent/opencode.json" and spec.env["OPENCODE_DISABLE_PROJECT_CONFIG"] == "1"
    provider = config["provider"]["harnessrl"]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["options"] == {"baseURL": "http://127.0.0.1:9/v1", "apiKey": "sk-e"}
    assert provider["models"]["m"]["limit"] == {"context": 32768, "output": 512} and provider["models"]["m"]["tool_call"]
    assert config["model"] == config["small_model"] == "harnessrl/m" and config["autoupdate"] is False
    # `config` is merged key by key: the launch's other permissions stay
    assert config["permission"] == {"edit": "allow", "bash": "allow", "webfetch": "allow"}


def test_the_codex_launch_points_it_at_the_responses_wire_with_its_sandbox_off(agents_dir):  # noqa: F811
    fake_install("codex-cli")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sandbox = Sandbox(Limits(), unsafe=True, bwrap="/nonexistent")
    with Workspace.create(None, quota_mb=16) as ws:
        spec = launch_spec("codex-cli", ws, sandbox, task="-starts like a flag", base_url="http://127.0.0.1:9/v1",
                           api_key="sk-e", model="m", config={"model_context_window": 8192})
        given = (spec.state_dir / "task.md").read_text()
        home = (spec.state_dir / "codex").is_dir()
    argv = list(spec.argv)
    assert given == "-starts like a flag" and argv[-1] == "-" and argv[2] == 'exec "$0" "$@" < /agent/task.md'
    assert argv[4:8] == ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--cd"]
    overrides = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "-c" and i > 3)
    assert overrides["model_providers.harnessrl.wire_api"] == '"responses"'
    assert overrides["model_providers.harnessrl.base_url"] == '"http://127.0.0.1:9/v1"'
    assert overrides["model_provider"] == '"harnessrl"' and overrides["model_context_window"] == "8192"
    # the key reaches it through the environment variable its provider names, not the command line
    assert overrides["model_providers.harnessrl.env_key"] == '"HARNESSRL_API_KEY"' and "sk-e" not in " ".join(argv)
    assert spec.env["HARNESSRL_API_KEY"] == "sk-e" and spec.env["CODEX_HOME"] == "/agent/codex" and home
