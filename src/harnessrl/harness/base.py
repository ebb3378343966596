"""Harness base: how a policy meets a task — prompt, tools, control.

A harness is data (`HarnessSpec`: prompt templates, tool set, limits, style options; a user
can write one in a TOML/YAML file) plus a small class (one per *style*) that

  1. renders the task into the first messages          `Harness.open(task, env, seed)`
  2. parses model output into tool calls                `TextHarness.parse(text)`
  3. executes them against the episode's environment   (inside the sandbox for shells)
  4. renders what happened as the next observation      `Session.step(text) -> StepResult`
  5. decides when to stop, then asks the env for the verdict   `Session.finish() -> Verdict`

Two kinds of style share this base. Our own styles are `TextHarness`es: the harness parses
the model's text itself. A program harness (harness/program.py) runs a real agent program,
which parses its model's replies itself: it has no `parse` at all (the type says so), and
what it renders scripted intents into is the program's own tool calls (its tool table).

Malformed output never raises: `parse` returns a `FormatError`, the session turns it into a
`format_error` observation (the model is told what was wrong) and counts it. Parsers run in
time linear in the reply and within the limits of `_reply` (reply size, JSON depth, numbers).

The *environment* of an agent episode is whatever the task kind needs: a sandboxed
`Workspace` for code/terminal tasks (harnessrl.tasks), a browser env for MiniWoB++
(harnessrl.envs.miniwob). A style declares which kinds it drives (`env_kinds`).

Scripted policies (oracles, faulty oracles, BiPA test policies) speak in *intents* — an
abstract action such as `Intent("replace", path=..., old=..., new=...)` — and each style
renders an intent in its own syntax (`Harness.render_intent`), the inverse of `parse`. So one
plan solves a task through every harness, and every ceiling is shown reachable.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any, ClassVar

from pydantic import Field

from harnessrl.config import Config, ConfigError, read_file
from harnessrl.tasks.contract import TaskLike

# ---------------------------------------------------------------------------------------
# Data passed between harness, policy and rollout


@dataclass(slots=True)
class ToolCall:
    """One parsed action in the harness's own vocabulary (e.g. name="str_replace_editor")."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "args": self.args}


@dataclass(slots=True)
class FormatError:
    """Why model output could not be parsed; shown to the model as its observation.

    `crash` names an exception a parser let escape (caught by `_reply.guarded`); it is empty
    for every ordinary format error, and the parser tests fail on any non-empty one."""

    message: str
    crash: str = ""


@dataclass(slots=True)
class Intent:
    """An abstract action a scripted policy wants taken, independent of any harness syntax.

    kinds: read(path) | write(path, content) | replace(path, old, new) | run(command)
           | click(ref) | type(ref, text) | keys(keystrokes) | answer(text) | finish(message)
    """

    kind: str
    args: dict[str, Any] = field(default_factory=dict)

    def __init__(self, kind: str, **args: Any):
        self.kind, self.args = kind, args


@dataclass(slots=True)
class StepResult:
    """What one policy turn produced, as the rollout records it in a `Turn`."""

    observation: str  # text appended to the conversation as the next user message ("" when done)
    status: str = "ok"  # a harnessrl.episode.TURN_STATUSES value
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_result: str = ""
    done: bool = False
    reward: float = 0.0  # per-step reward where the env gives one (MiniWoB)

    @property
    def tool_call_json(self) -> str:
        return json.dumps([c.to_json() for c in self.tool_calls], ensure_ascii=False) if self.tool_calls else ""


@dataclass(slots=True)
class Verdict:
    """How the episode ended: the env's judgement plus the harness's stop reason."""

    reward: float
    success: bool
    outcome: str  # "solved", "dropped_requirement", "broke_existing", "wrong_object", "failed", ...
    status: str = "ok"  # a harnessrl.episode.STATUSES value
    raw_reward: float | None = None
    info: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------
# Harness specs: data a user can write in a config file


class HarnessSpec(Config):
    """A harness as data. `style` picks the class; the rest configures it."""

    id: str = Field(..., description="Unique harness id, recorded in every episode's context.")
    style: str = Field(..., description="Which harness class runs it; see HARNESS_STYLES.")
    description: str = ""
    system_prompt: str = Field("", description="Template; $placeholders are filled by the style.")
    task_template: str = Field("$instruction", description="Template for the first user message.")
    tools: list[str] | None = Field(None, description="Subset of the style's tools; None = all.")
    max_turns: int = Field(30, ge=1)
    max_format_errors: int = Field(3, ge=0, description="Consecutive format errors before the run ends.")
    max_observation_chars: int = Field(10_000, ge=100)
    max_reply_chars: int = Field(200_000, ge=1_000, description="Longer replies are format errors, never parsed.")
    command_timeout_s: float = Field(30.0, gt=0)
    skill: str | None = Field(None, description="Skill text injected into the system prompt ($skill).")
    skill_version: str = ""
    options: dict[str, Any] = Field(default_factory=dict, description="Style-specific options.")


def fill(template: str, **values: Any) -> str:
    """Fill `$name` placeholders; unknown placeholders stay as they are."""
    return Template(template).safe_substitute({k: "" if v is None else v for k, v in values.items()})


# ---------------------------------------------------------------------------------------
# The two classes a style implements


class Session(ABC):
    """One episode of one task under one harness. Created by `Harness.open`."""

    def __init__(self, harness: "Harness", task: TaskLike, env: Any, seed: int):
        self.harness, self.task, self.env, self.seed = harness, task, env, seed
        self.messages: list[dict[str, str]] = []
        self.turn = 0
        self.format_errors = 0  # total over the episode
        self.consecutive_format_errors = 0
        self.done = False
        self.stop_status = "ok"  # why the harness stopped, as an episode status

    @abstractmethod
    def start(self) -> list[dict[str, str]]:
        """Build the first messages (system + task) and return `self.messages`."""

    @abstractmethod
    def step(self, text: str) -> StepResult:
        """Apply one model turn; append the assistant message and the observation to messages."""

    @abstractmethod
    def finish(self) -> Verdict:
        """Ask the environment for the verdict (hidden tests, env reward)."""

    def ready(self) -> None:
        """Called once after every session of a group has started, before the first turn: a
        program harness waits here for its program's first call, so a group's programs start
        at the same time. Our own harnesses are ready when `start` returns."""

    # -- two-phase stepping: the rollout loop sends every answer of a turn, then receives each result

    def send(self, text: str, action: Any = None) -> None:
        """Phase one: hand over the policy's reply (`action`: the policy's Action, for records).
        Our own harnesses do all the work in `receive`; a program harness answers its pending
        model call here, so every program of a group runs its tools while the others are sent."""
        self._sent_text = text

    def receive(self) -> StepResult:
        """Phase two: the result of the reply sent (waits for a program's next call or exit)."""
        return self.step(self._sent_text)

    def view(self) -> dict[str, Any]:
        """Structured state for scripted policies (never shown to learned policies)."""
        return {}

    # -- helpers every style uses -----------------------------------------------------

    def record_format_error(self, text: str, err: FormatError) -> StepResult:
        """Count a malformed turn, tell the model, and stop after too many in a row."""
        self.format_errors += 1
        self.consecutive_format_errors += 1
        obs = self.harness.format_error_message(err)
        self.messages += [{"role": "assistant", "content": text}, {"role": "user", "content": obs}]
        if self.consecutive_format_errors > self.harness.spec.max_format_errors:
            self.done, self.stop_status = True, "format_error"
        return StepResult(observation=obs, status="format_error", tool_result=err.message, done=self.done)

    def end_turn(self, text: str, observation: str, **result: Any) -> StepResult:
        """Append assistant text + observation; apply the turn limit."""
        self.consecutive_format_errors = 0
        self.turn += 1
        self.messages.append({"role": "assistant", "content": text})
        if observation:
            self.messages.append({"role": "user", "content": observation})
        done = bool(result.pop("done", False))
        if not done and self.turn >= self.harness.spec.max_turns:
            done, self.stop_status = True, "turn_limit"
        self.done = self.done or done
        return StepResult(observation=observation, done=self.done, **result)


class Harness(ABC):
    """A style of harness. Subclasses set `style`, `env_kinds`, `tools` and implement the hooks."""

    style: ClassVar[str]
    env_kinds: ClassVar[tuple[str, ...]]  # task kinds this style can drive: "code", "terminal", "miniwob"
    all_tools: ClassVar[tuple[str, ...]] = ()
    session_class: ClassVar[type[Session]]

    def __init__(self, spec: HarnessSpec):
        if STYLE_ALIASES.get(spec.style, spec.style) != spec.style:  # a renamed style: its old name still loads
            spec = spec.model_copy(update={"style": STYLE_ALIASES[spec.style]})
        if spec.style != self.style:
            raise ConfigError(f"harness {spec.id!r}: style {spec.style!r} given to the {self.style!r} class")
        unknown = set(spec.tools or ()) - set(self.all_tools)
        if unknown:
            raise ConfigError(
                f"harness {spec.id!r}: tools {sorted(unknown)} are not tools of style {self.style!r}; "
                f"allowed: {', '.join(self.all_tools)}"
            )
        self.spec = spec

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(self.spec.tools) if self.spec.tools is not None else self.all_tools

    def supports(self, task: TaskLike) -> bool:
        return getattr(task, "kind", None) in self.env_kinds

    def open(self, task: TaskLike, env: Any, seed: int) -> Session:
        if not self.supports(task):
            raise ConfigError(f"harness {self.id!r} ({self.style}) cannot drive {task.kind!r} tasks; it drives {self.env_kinds}")
        session = self.session_class(self, task, env, seed)
        session.start()
        return session

    @abstractmethod
    def render_intent(self, intent: Intent, session: Session) -> str:
        """An abstract action -> model output text in this style's syntax (for a TextHarness, the
        inverse of parse; for a program, a call of the program's own tools)."""

    # -- what scripted policies (the oracle, its faulty variants, the attacks) rely on -----

    @property
    def capabilities(self) -> set[str] | None:
        """What the harness's tools let an agent do to a workspace ("shell", "edit"); None for a
        harness that works on no files or commands (lookup, web pages). Code harnesses derive it
        from their tools."""
        return None

    def render_turn(self, intents: list[Intent], session: Session) -> tuple[str, int]:
        """Text for the next turn of a scripted plan, and how many of `intents` it carries out
        (0 = a preparatory action such as opening a file first). Styles that accept several
        actions per turn override this to batch them."""
        return self.render_intent(intents[0], session), 1

    def format_error_message(self, err: FormatError) -> str:
        return f"Your response could not be parsed: {err.message}\nPlease answer again in the required format."


class TextHarness(Harness):
    """A style whose harness reads the model's text itself (every style but the real programs')."""

    @abstractmethod
    def parse(self, text: str) -> list[ToolCall] | FormatError:
        """Model output -> tool calls in this style's syntax. Never raises."""


# ---------------------------------------------------------------------------------------
# Registry of styles and built-in specs

HARNESS_STYLES: dict[str, type[Harness]] = {}
#: renamed styles: old name -> new. Stored specs and run files name the old ones; they still load
STYLE_ALIASES: dict[str, str] = {"aider": "aider_reconstruction", "openhands": "openhands_reconstruction",
                                 "qwen_code": "qwen_code_reconstruction"}
SPEC_DIR = Path(__file__).with_name("specs")


def register_style(cls: type[Harness]) -> type[Harness]:
    HARNESS_STYLES[cls.style] = cls
    return cls


def builtin_specs() -> dict[str, Path]:
    """Built-in harness ids -> their spec files (harness/specs/*.toml): the harnesses `all` means."""
    return {p.stem: p for p in sorted(SPEC_DIR.glob("*.toml"))}


def variant_specs() -> dict[str, Path]:
    """Ceiling-changing variants (harness/specs/variants/*.toml): known by id, not part of `all`."""
    return {p.stem: p for p in sorted((SPEC_DIR / "variants").glob("*.toml"))}


def program_specs() -> dict[str, Path]:
    """Real agent programs run as black-box harnesses (harness/specs/programs/*.toml, then the spec
    files of programs from installed packages): known by id, not part of `all` (each needs its
    program installed: `harnessrl agents install NAME`)."""
    from harnessrl.programs import external_programs

    specs = _builtin_program_specs()
    for prog in external_programs().values():
        specs.update({p.stem: p for p in prog.specs if p.stem not in specs})
    return specs


def _builtin_program_specs() -> dict[str, Path]:
    return {p.stem: p for p in sorted((SPEC_DIR / "programs").glob("*.toml"))}


def load_spec(id_or_path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> HarnessSpec:
    """A built-in harness id, or a path to a user's TOML/YAML harness file."""
    from harnessrl.config import apply_overrides, format_validation_error
    from pydantic import ValidationError

    path = Path(id_or_path)
    specs = {**variant_specs(), **_builtin_program_specs(), **builtin_specs()}
    if str(id_or_path) not in specs and not path.exists() and not path.suffix:
        specs.update({k: v for k, v in program_specs().items() if k not in specs})  # programs of installed packages
    if str(id_or_path) not in specs and not path.exists():
        plugin = _plugin_spec(str(id_or_path))
        if plugin is not None:
            return plugin.model_copy(deep=True) if not overrides else HarnessSpec.model_validate(
                apply_overrides(plugin.model_dump(), overrides))
    if not path.suffix:
        if str(id_or_path) not in specs:
            raise ConfigError(
                f"unknown harness {str(id_or_path)!r}; built-in: {', '.join(builtin_specs())}; "
                f"variants: {', '.join(variant_specs())}; programs: {', '.join(program_specs())} "
                "(or give a .toml/.yaml path)"
            )
        path = specs[str(id_or_path)]
    data = apply_overrides(read_file(path), overrides)
    try:
        return HarnessSpec.model_validate(data)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, HarnessSpec, str(path))) from None


def _plugin_spec(name: str) -> HarnessSpec | None:
    """A harness from outside harnessrl: `pkg.module:attr` or an entry point of `harnessrl.harnesses`, naming a
    HarnessSpec, a dict of its fields, or a callable returning either. None when `name` is neither."""
    from harnessrl import plugins

    obj = plugins.resolve("harnessrl.harnesses", name, "harness")
    if obj is None:
        return None
    if callable(obj) and not isinstance(obj, type):
        obj = obj()
    if isinstance(obj, dict):
        obj = HarnessSpec.model_validate(obj)
    if not isinstance(obj, HarnessSpec):
        raise ConfigError(f"harness {name!r} names a {type(obj).__name__}, not a HarnessSpec (a Harness class goes in a "
                          "spec's `style`)")
    return obj


def _style(spec: HarnessSpec) -> type[Harness]:
    """The class of a spec's style: registered, or a plugin (`pkg.module:Class`, an entry point of
    `harnessrl.harnesses`), imported in whichever process builds the harness (workers included)."""
    style = STYLE_ALIASES.get(spec.style, spec.style)
    if style in HARNESS_STYLES:
        return HARNESS_STYLES[style]
    from harnessrl.harness.program import style_of_program

    cls = style_of_program(style)  # a program from an installed package (entry point harnessrl.programs)
    if cls is not None:
        return cls
    from harnessrl import plugins

    cls = plugins.resolve("harnessrl.harnesses", spec.style, "harness style")
    if cls is None:
        raise ConfigError(f"harness {spec.id!r}: unknown style {spec.style!r}; allowed: {', '.join(sorted(HARNESS_STYLES))}, "
                          "or a plugin: pkg.module:Class / an entry point of harnessrl.harnesses")
    if not (isinstance(cls, type) and issubclass(cls, Harness)):
        raise ConfigError(f"harness {spec.id!r}: style {spec.style!r} is not a Harness subclass")
    HARNESS_STYLES[spec.style] = cls
    return cls


def make_harness(spec: HarnessSpec | str | Path) -> Harness:
    """Instantiate a harness from a spec, a built-in id, a spec file or a plugin reference."""
    _import_styles()
    if not isinstance(spec, HarnessSpec):
        spec = load_spec(spec)
    return _style(spec)(spec)


def _import_styles() -> None:
    """Import every style module in this package so they register themselves."""
    import importlib
    import pkgutil

    import harnessrl.harness as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name not in ("base",) and not mod.name.startswith("_"):
            importlib.import_module(f"harnessrl.harness.{mod.name}")
