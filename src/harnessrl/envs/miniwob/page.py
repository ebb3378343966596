"""What a harness sees of a MiniWoB page, and the abstract actions it can send back.

A `Page` is a flat, depth-annotated list of `Element`s (miniwob's DOM walk: visible elements
only, each with a `ref` that stays fixed for the episode) plus the utterance and its fields.
`AXNode`s are Chromium's own accessibility tree for the same page, tied to the same refs where
the node is an element miniwob can act on.

Actions are harness-neutral: `Click(ref)`, `Type(ref, text)` (focus the element, then type),
`PressKey(key)`, `Wait(ms)` (let an animation finish, then look again). Each harness gives them its own syntax; the env turns them into miniwob actions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from miniwob.constants import DEFAULT_ALLOWED_KEYS, WEBDRIVER_SPECIAL_KEYS
from miniwob.dom import DOMElement


@dataclass(frozen=True, slots=True)
class Element:
    """One visible DOM element (or text run, tag "t", ref < 0) of a MiniWoB page."""

    ref: int
    parent: int  # 0 for the root
    depth: int
    tag: str  # lower-case; inputs carry their type: "input_text", "input_checkbox"
    text: str  # leaf text ("" for containers)
    value: Any  # input value; bool for checkboxes/radios; None for non-inputs
    id: str
    classes: str
    left: float
    top: float
    width: float
    height: float
    focused: bool
    tampered: bool  # clicked/focused/typed into during this episode
    is_leaf: bool
    options: tuple[str, ...] = ()  # <select> only: option texts (value = the selected one; all selected if multiple)
    multiple: bool = False  # <select multiple>

    @property
    def actionable(self) -> bool:
        """Text runs (ref < 0) cannot be clicked through miniwob; elements can."""
        return self.ref > 0


@dataclass(frozen=True, slots=True)
class AXNode:
    """One node of Chromium's accessibility tree (`Accessibility.getFullAXTree`)."""

    role: str
    name: str
    depth: int
    ref: int | None  # the miniwob ref of the DOM element behind it, when it has one on the page
    value: str = ""
    properties: tuple[tuple[str, Any], ...] = ()  # e.g. ("checked", "true"), ("focused", True)
    tag: str = ""  # SVG shapes only: the element ("circle", "rect", "polygon", "text" ...)
    attrs: tuple[tuple[str, str], ...] = ()  # SVG shapes only: class, fill, size attributes


@dataclass(frozen=True, slots=True)
class Page:
    """The observation of one MiniWoB step. Empty (`done=True`, no elements) once the episode ends."""

    task: str
    utterance: str
    fields: tuple[tuple[str, str], ...]
    elements: tuple[Element, ...]
    done: bool = False
    _by_ref: dict[int, Element] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_ref.update((e.ref, e) for e in self.elements)

    def get(self, ref: int) -> Element | None:
        return self._by_ref.get(ref)

    def children(self, ref: int) -> list[Element]:
        return [e for e in self.elements if e.parent == ref]

    def field(self, key: str, default: str = "") -> str:
        return dict(self.fields).get(key, default)


def elements_from_dom(root: DOMElement) -> tuple[Element, ...]:
    """miniwob's DOMElement tree -> depth-first list of Elements (root first)."""
    out: list[Element] = []
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        value = node.value
        out.append(
            Element(
                ref=node.ref,
                parent=node.parent.ref if node.parent else 0,
                depth=depth,
                tag=node.tag,
                text=node.text or "",
                value=value,
                id=node.id or "",
                classes=node.classes or "",
                left=float(node.left),
                top=float(node.top),
                width=float(node.width),
                height=float(node.height),
                focused=bool(node.focused),
                tampered=bool(node.tampered),
                is_leaf=bool(node.is_leaf),
            )
        )
        stack.extend((child, depth + 1) for child in reversed(node.children))
    return tuple(out)


# ----------------------------------------------------------------------------------------
# Abstract actions


@dataclass(frozen=True, slots=True)
class Click:
    ref: int


@dataclass(frozen=True, slots=True)
class Type:
    """Focus (click) the element, then type `text` into it."""

    ref: int
    text: str


@dataclass(frozen=True, slots=True)
class PressKey:
    """One key or combination in miniwob's syntax: "a", "<Enter>", "C-a" (ctrl+a)."""

    key: str


@dataclass(frozen=True, slots=True)
class Wait:
    """Do nothing for `ms` milliseconds, then look again (animations, menus that open late)."""

    ms: int = 500


WebAction = Union[Click, Type, PressKey, Wait]
SPECIAL_KEYS = tuple(WEBDRIVER_SPECIAL_KEYS)
#: The keys miniwob's action space can press (its "all_supported" preset); WebDriver knows more
#: (Escape, Home, End ...) but miniwob refuses them, so a harness refuses them at parse time.
ALLOWED_KEYS = tuple(DEFAULT_ALLOWED_KEYS)
MAX_WAIT_MS = 5000


def action_to_dict(action: WebAction) -> dict[str, Any]:
    """A JSON-able form for records: {"action": "click", "ref": 4}."""
    if isinstance(action, Click):
        return {"action": "click", "ref": action.ref}
    if isinstance(action, Type):
        return {"action": "type", "ref": action.ref, "text": action.text}
    if isinstance(action, PressKey):
        return {"action": "press", "key": action.key}
    if isinstance(action, Wait):
        return {"action": "wait", "ms": action.ms}
    raise TypeError(f"not a MiniWoB action: {action!r}")
