"""Scripted oracles: one function per MiniWoB task, `oracle(page) -> next WebAction | None`.

An oracle reads only what a harness shows a policy (utterance, fields, the element list with
values and `tampered` flags) and answers with a harness-neutral action, so each harness can
replay it in its own syntax. Oracles are stateless: where a task takes several steps the page
itself says how far the episode is (a typed value, a checked box, a tab already tried).
`None` means the oracle cannot continue; the episode then fails honestly.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable

from harnessrl.envs.miniwob.page import Click, Element, Page, PressKey, Type, WebAction

Oracle = Callable[[Page], WebAction | None]
ORACLES: dict[str, Oracle] = {}


def oracle(*tasks: str) -> Callable[[Oracle], Oracle]:
    def register(fn: Oracle) -> Oracle:
        for task in tasks:
            ORACLES[task] = fn
        return fn

    return register


def get_oracle(task: str) -> Oracle:
    if task not in ORACLES:
        raise KeyError(f"no scripted oracle for MiniWoB task {task!r}; oracles exist for: {', '.join(sorted(ORACLES))}")
    return ORACLES[task]


# ----------------------------------------------------------------------------------------
# Page helpers


def find(page: Page, tag: str | None = None, text: str | None = None, cls: str | None = None,
         id: str | None = None) -> list[Element]:
    """Actionable elements matching every given criterion (class = one of the element's classes)."""
    return [
        e for e in page.elements
        if e.actionable
        and (tag is None or e.tag == tag)
        and (text is None or e.text == text)
        and (cls is None or cls in e.classes.split())
        and (id is None or e.id == id)
    ]


def first(elements: list[Element]) -> Element | None:
    return elements[0] if elements else None


def label_text(page: Page, element: Element) -> str:
    """The text next to an input: its siblings' text, else its parent's siblings' text."""
    for parent_ref in (element.parent, getattr(page.get(element.parent), "parent", None)):
        if parent_ref is None:
            break
        texts = [_subtree_text(page, e) for e in page.children(parent_ref) if e.ref != element.ref]
        text = " ".join(t for t in texts if t)
        if text:
            return text
    return ""


def _subtree_text(page: Page, element: Element) -> str:
    if element.tag.startswith("input") or element.tag in ("textarea", "select", "button"):
        return ""
    if element.text:
        return element.text
    return " ".join(t for t in (_subtree_text(page, c) for c in page.children(element.ref)) if t)


def submit_button(page: Page, *names: str) -> Element | None:
    names = names or ("Submit",)
    return first([e for e in page.elements if e.actionable and e.text in names and not e.tag.startswith("input")])


def fill_then_submit(page: Page, entries: list[tuple[Element | None, str]], *submit_names: str) -> WebAction | None:
    """Type each (input, text) whose value differs, then press the submit button."""
    for element, text in entries:
        if element is None:
            return None
        if element.value != text:
            return Type(element.ref, text) if not element.value else None  # never type over a wrong value
    button = submit_button(page, *submit_names)
    return Click(button.ref) if button else None


# ----------------------------------------------------------------------------------------
# Click tasks


@oracle("click-test")
def click_test(page: Page) -> WebAction | None:
    button = first(find(page, tag="button"))
    return Click(button.ref) if button else None


@oracle("click-test-2", "click-button", "unicode-test")
def click_named_button(page: Page) -> WebAction | None:
    button = first(find(page, tag="button", text=page.field("target")))
    return Click(button.ref) if button else None


@oracle("click-button-sequence")
def click_button_sequence(page: Page) -> WebAction | None:
    one, two = first(find(page, tag="button", text="ONE")), first(find(page, tag="button", text="TWO"))
    if one is None or two is None:
        return None
    return Click(two.ref) if one.tampered else Click(one.ref)


@oracle("click-link")
def click_link(page: Page) -> WebAction | None:
    link = first(find(page, cls="alink", text=page.field("target")))
    return Click(link.ref) if link else None


@oracle("click-dialog")
def click_dialog(page: Page) -> WebAction | None:
    close = first(find(page, tag="button", cls="ui-dialog-titlebar-close"))
    return Click(close.ref) if close else None


@oracle("click-dialog-2")
def click_dialog_2(page: Page) -> WebAction | None:
    target = page.field("target")
    if target.lower() == "x":
        return click_dialog(page)
    button = first(find(page, tag="button", text=target))
    return Click(button.ref) if button else None


@oracle("click-checkboxes")
def click_checkboxes(page: Page) -> WebAction | None:
    wanted = {v for k, v in page.fields if k.startswith("target")}
    for box in find(page, tag="input_checkbox"):
        if (label_text(page, box) in wanted) != bool(box.value):
            return Click(box.ref)
    button = submit_button(page)
    return Click(button.ref) if button else None


@oracle("click-option")
def click_option(page: Page) -> WebAction | None:
    target = page.field("target")
    radio = first([r for r in find(page, tag="input_radio") if label_text(page, r) == target])
    if radio is None:
        return None
    if not radio.value:
        return Click(radio.ref)
    button = submit_button(page)
    return Click(button.ref) if button else None


@oracle("click-tab")
def click_tab(page: Page) -> WebAction | None:
    tab = first(find(page, cls="ui-tabs-anchor", text=f"Tab #{page.field('target')}"))
    return Click(tab.ref) if tab else None


@oracle("click-tab-2")
def click_tab_2(page: Page) -> WebAction | None:
    link = first(find(page, cls="alink", text=page.field("target")))
    if link is not None:
        return Click(link.ref)
    # The link is on a hidden tab: open the next tab not shown yet.
    for tab in find(page, cls="ui-tabs-anchor"):
        item = page.get(tab.parent)
        active = item is not None and "ui-tabs-active" in item.classes.split()
        if not active and not tab.tampered:
            return Click(tab.ref)
    return None


@oracle("click-collapsible")
def click_collapsible(page: Page) -> WebAction | None:
    header = first(find(page, cls="ui-accordion-header"))
    if header is None:
        return None
    if "ui-accordion-header-collapsed" in header.classes.split():
        return Click(header.ref)
    button = submit_button(page)
    return Click(button.ref) if button else None


_WIDGET_TAGS = {"radio": "input_radio", "checkbox": "input_checkbox", "text": "input_text",
                "textarea": "textarea", "button": "button"}


@oracle("click-widget")
def click_widget(page: Page) -> WebAction | None:
    widget = first(find(page, tag=_WIDGET_TAGS.get(page.field("target"), "?")))
    return Click(widget.ref) if widget else None


@oracle("focus-text")
def focus_text(page: Page) -> WebAction | None:
    box = first(find(page, tag="input_text"))
    return Click(box.ref) if box else None


@oracle("focus-text-2")
def focus_text_2(page: Page) -> WebAction | None:
    boxes = find(page, tag="input_text")
    index = int(page.field("target") or 0) - 1
    return Click(boxes[index].ref) if 0 <= index < len(boxes) else None


# ----------------------------------------------------------------------------------------
# Typing tasks


@oracle("enter-text", "enter-text-dynamic")
def enter_text(page: Page) -> WebAction | None:
    return fill_then_submit(page, [(first(find(page, tag="input_text")), page.field("target"))])


@oracle("enter-text-2")
def enter_text_2(page: Page) -> WebAction | None:
    text = page.field("text")
    text = text.upper() if page.field("case") == "upper" else text.lower()
    return fill_then_submit(page, [(first(find(page, tag="input_text")), text)])


@oracle("enter-password")
def enter_password(page: Page) -> WebAction | None:
    boxes = find(page, tag="input_password")
    return fill_then_submit(page, [(b, page.field("target")) for b in boxes] or [(None, "")])


@oracle("login-user")
def login_user(page: Page) -> WebAction | None:
    user = first(find(page, tag="input_text", id="username"))
    password = first(find(page, tag="input_password", id="password"))
    return fill_then_submit(page, [(user, page.field("username")), (password, page.field("password"))], "Login")


@oracle("choose-list")
def choose_list(page: Page) -> WebAction | None:
    select, target = first(find(page, tag="select")), page.field("target")
    if select is None or target not in select.options:
        return None
    if select.value == target:
        button = submit_button(page)
        return Click(button.ref) if button else None
    if not select.tampered:
        return Type(select.ref, target)  # Chromium's type-ahead picks the option
    # Type-ahead landed on another option with the same prefix: step there with the arrows.
    here, there = select.options.index(select.value), select.options.index(target)
    return PressKey("<ArrowDown>" if there > here else "<ArrowUp>")


_ARITHMETIC = re.compile(r"^\s*(-?\d+)\s*([-+x*/])\s*(-?\d+)\s*=\s*$")
_OPS = {"+": operator.add, "-": operator.sub, "x": operator.mul, "*": operator.mul}


@oracle("simple-arithmetic")
def simple_arithmetic(page: Page) -> WebAction | None:
    problem = first(find(page, id="math-problem"))
    match = _ARITHMETIC.match(problem.text) if problem else None
    if match is None or match.group(2) not in _OPS:
        return None
    answer = _OPS[match.group(2)](int(match.group(1)), int(match.group(3)))
    return fill_then_submit(page, [(first(find(page, tag="input_text")), str(answer))])


@oracle("read-table")
def read_table(page: Page) -> WebAction | None:
    key = first([e for e in page.elements if e.tag in ("td", "th") and e.text == page.field("target")])
    if key is None:
        return None
    row = page.children(key.parent)
    cells = [c for c in row if c.tag in ("td", "th") and c.ref != key.ref]
    if not cells:
        return None
    return fill_then_submit(page, [(first(find(page, tag="input_text")), cells[0].text)])


_ORDINAL = re.compile(r"(\d+)(st|nd|rd|th)")


@oracle("find-word")
def find_word(page: Page) -> WebAction | None:
    match = _ORDINAL.search(page.utterance)
    paragraph = first([e for e in page.elements if e.tag == "p" and e.text])
    if match is None or paragraph is None:
        return None
    words = [re.sub(r"[^a-zA-Z]+", "", w) for w in paragraph.text.split()]
    words = [w for w in words if w]
    index = int(match.group(1)) - 1
    if not 0 <= index < len(words):
        return None
    return fill_then_submit(page, [(first(find(page, id="answer-input")), words[index])])


_MOVIE_FIELDS = {"genre": ("genre",), "director": ("director",), "year": ("year", "date")}
_MOVIE_SUBMITS = ("Submit", "Search", "Go!", "Find", "Go")


@oracle("multi-layouts", "multi-orderings")
def movie_search(page: Page) -> WebAction | None:
    entries = []
    for box in find(page, tag="input_text"):
        label = label_text(page, box).lower()
        key = next((k for k, words in _MOVIE_FIELDS.items() if any(w in label for w in words)), None)
        if key is None:
            return None
        entries.append((box, page.field(key)))
    if len(entries) != 3:
        return None
    return fill_then_submit(page, entries, *_MOVIE_SUBMITS)
