"""The `lookup` suite: small multi-turn question answering a tiny LM can learn on a CPU.

Each task names a few objects and asks for one or two attributes (colour, size, material)
of one of them; the values are drawn per episode seed, as MiniWoB draws a page per seed,
so answers cannot be memorised and the same task trains with many seeds. The agent can
`look` at an object (the env returns its attributes) and then `answer`; the verdict
compares the answer's words with the asked values. Two turns solve a task, so steps per episode, format errors and the
failure modes of the agentic-coding papers all show up at a scale that trains in minutes:

    solved               every asked value and nothing else
    dropped_requirement  a two-attribute question answered with only one of its values
    wrong_object         the asked attribute of a *different* object (it looked in the wrong place)
    wrong_value          any other wrong answer
    no_answer            the episode ended (turn limit, format errors, token budget) without one

Tasks are generated from a fixed seed and versioned (`VERSION`); a task id is
`lookup/<number>`. How the task is shown (wording, observation format, command syntax)
belongs to the harness (harness/lookup.py), never to the task.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

SUITE = "lookup"
VERSION = "1"

OBJECTS = ("box", "lamp", "door", "key", "cup", "book", "ball", "coat", "desk", "fan", "hat", "jar",
           "mug", "pen", "rug", "vase", "bell", "sock", "kite", "drum")
VALUES: dict[str, tuple[str, ...]] = {
    "color": ("red", "blue", "green", "black", "white", "pink", "gray", "brown"),
    "size": ("small", "large", "tiny", "huge", "short", "tall"),
    "material": ("wood", "metal", "glass", "paper", "stone", "cloth"),
}
ATTRIBUTES = tuple(VALUES)


@dataclass(frozen=True)
class LookupTask:
    """One question about one of a few objects; the objects' attributes come with the seed."""

    number: int
    objects: tuple[str, ...]
    target: str
    asked: tuple[str, ...]  # one or two attributes
    suite: str = SUITE
    kind: str = "lookup"
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def task_id(self) -> str:
        return f"{self.suite}/{self.number:03d}"

    @property
    def id(self) -> str:
        return self.task_id

    @property
    def instruction(self) -> str:
        """The canonical question (harnesses may phrase it their own way from `target`/`asked`)."""
        if len(self.asked) == 1:
            return f"What is the {self.asked[0]} of the {self.target}?"
        return f"What are the {self.asked[0]} and the {self.asked[1]} of the {self.target}?"

    def world(self, seed: int) -> dict[str, dict[str, str]]:
        """The objects' attributes in the episode with this seed."""
        rng = random.Random(f"lookup-v{VERSION}-{self.number}-{seed}")
        return {name: {a: rng.choice(VALUES[a]) for a in ATTRIBUTES} for name in self.objects}

    def expected(self, seed: int) -> list[str]:
        attrs = self.world(seed)[self.target]
        return [attrs[a] for a in self.asked]


def generate(n: int = 400, seed: int = 0, objects_per_task: int = 3, double_fraction: float = 0.3) -> list[LookupTask]:
    """`n` tasks, the same for the same arguments (this is the suite's content)."""
    rng = random.Random(f"lookup-v{VERSION}-{seed}")
    tasks = []
    for i in range(n):
        names = tuple(rng.sample(OBJECTS, objects_per_task))
        k = 2 if rng.random() < double_fraction else 1
        asked = tuple(sorted(rng.sample(ATTRIBUTES, k), key=ATTRIBUTES.index))
        tasks.append(LookupTask(i, names, rng.choice(names), asked))
    return tasks


def lookup_tasks(ids: list[str] | None = None, n: int = 400, seed: int = 0) -> list[LookupTask]:
    """The suite's tasks, or the named ones ("lookup/007" or "7")."""
    tasks = generate(n, seed)
    if ids is None:
        return tasks
    by_id = {t.task_id: t for t in tasks}
    out = []
    for raw in ids:
        key = raw if str(raw).startswith(f"{SUITE}/") else f"{SUITE}/{int(raw):03d}"
        if key not in by_id:
            raise KeyError(f"unknown lookup task {raw!r}; the suite has {SUITE}/000 .. {SUITE}/{n - 1:03d}")
        out.append(by_id[key])
    return out


@dataclass(frozen=True)
class LookupSuite:
    """The registered suite `lookup` (rollout.suites): its 400 tasks, for `harnessrl eval` under
    the lookup harnesses; `find("7")` or `find("lookup/007")` names one."""

    tasks: tuple[LookupTask, ...]
    name: str = SUITE
    version: str = "1"
    description: str = "lookup: find an object's asked attributes by looking (the recipes' training environment)"

    def __iter__(self):
        return iter(self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)

    def find(self, name: str) -> LookupTask:
        try:
            return lookup_tasks([name])[0]
        except (KeyError, ValueError) as err:  # an unknown number, or not a number: the caller's one-line error
            raise ValueError(err.args[0] if isinstance(err, KeyError) else f"unknown lookup task {name!r}") from None


def load_suite() -> LookupSuite:
    return LookupSuite(tuple(lookup_tasks()))


# ---------------------------------------------------------------------------------------
# The environment of one episode


class LookupEnv:
    """Answers `look` and records the one `answer`; `verdict()` judges it."""

    def __init__(self, task: LookupTask, seed: int = 0):
        self.task, self.seed = task, seed
        self.world = task.world(seed)
        self.expected = task.expected(seed)
        self.looked: list[str] = []
        self.answer_text: str | None = None

    def look(self, obj: str) -> dict[str, str] | None:
        obj = obj.strip().lower()
        self.looked.append(obj)
        return self.world.get(obj)

    def answer(self, text: str) -> None:
        if self.answer_text is None:
            self.answer_text = text

    def verdict(self) -> tuple[bool, str]:
        """(success, outcome label)."""
        if self.answer_text is None:
            return False, "no_answer"
        words = [w.strip(".,;:!?\"'()[]{}").lower() for w in self.answer_text.split()]
        words = [w for w in words if w and w not in ("and", "the", "is", "it", "a")]
        expected, asked = self.expected, self.task.asked
        if sorted(words) == sorted(expected):
            return True, "solved"
        if len(expected) == 2 and len(words) == 1 and words[0] in expected:
            return False, "dropped_requirement"
        others = [attrs for name, attrs in self.world.items() if name != self.task.target]
        if any(sorted(words) == sorted(attrs[a] for a in asked) for attrs in others):
            return False, "wrong_object"
        return False, "wrong_value"

    def close(self) -> None:
        pass


def open_env(task: LookupTask, seed: int) -> LookupEnv:
    """Rollout opener for kind "lookup"."""
    return LookupEnv(task, seed)
