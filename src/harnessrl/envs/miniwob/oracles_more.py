"""More scripted oracles: trees, accordions, autocomplete menus, shapes, pagination, forms.

Same contract as oracles.py (stateless, `oracle(page) -> next WebAction | None`, only what a
harness shows). Several of these pages animate (an accordion opening, an autocomplete menu
appearing after its delay): where the page has not caught up with the last action yet, the
oracle answers `Wait(...)` and looks again, as a person would.

Some MiniWoB tasks are variants of a task already solved here with the same page structure
(`-nodelay`, `-transfer`, `click-tab-2-easy/medium/hard`); they reuse its oracle, and
each is still checked on its own pages (tests, and 20 seeds per harness with
`harnessrl eval --suite miniwob --policy oracle --harness miniwob-html,miniwob-axtree --seeds 20`).
"""

from __future__ import annotations

import re

from harnessrl.envs.miniwob.oracles import (
    ORACLES,
    click_checkboxes,
    click_collapsible,
    click_named_button,
    click_tab_2,
    fill_then_submit,
    find,
    first,
    label_text,
    oracle,
    submit_button,
)
from harnessrl.envs.miniwob.page import Click, Page, Type, Wait, WebAction

SETTLE = Wait(300)  # long enough for jQuery UI's 300 ms autocomplete delay / accordion animation

# Same page structure as a task with an oracle: the same oracle.
for _alias, _fn in {
    "click-test-transfer": click_named_button,
    "click-checkboxes-transfer": click_checkboxes,
    "click-tab-2-easy": click_tab_2,
    "click-tab-2-medium": click_tab_2,
    "click-tab-2-hard": click_tab_2,
    "click-collapsible-nodelay": click_collapsible,
}.items():
    ORACLES[_alias] = _fn


def _click(element) -> WebAction | None:
    return Click(element.ref) if element is not None else None


def _descendants(page: Page, ref: int, cls: str) -> list:
    out, stack = [], [ref]
    while stack:
        for child in page.children(stack.pop()):
            if child.actionable and (not cls or cls in child.classes.split()):
                out.append(child)
            stack.append(child.ref)
    return out


@oracle("identify-shape")
def identify_shape(page: Page) -> WebAction | None:
    shape = first([e for e in page.elements if e.tag in ("rect", "circle", "polygon", "text") and e.actionable])
    if shape is None:
        return None
    if shape.tag == "text":
        answer = "Number" if shape.text.strip().isdigit() else "Letter"
    else:
        answer = {"rect": "Rectangle", "circle": "Circle", "polygon": "Triangle"}[shape.tag]
    return _click(first(find(page, tag="button", text=answer)))


@oracle("navigate-tree")
def navigate_tree(page: Page) -> WebAction | None:
    """Click the target if shown; else open the first closed folder (breadth first, top down)."""
    target = page.field("target")
    shown = first([e for e in page.elements if e.actionable and e.tag == "span" and e.text == target])
    if shown is not None:
        return Click(shown.ref)
    closed = [e for e in find(page, cls="expandable-hitarea") if not e.tampered]
    closed.sort(key=lambda e: (e.depth, e.top))
    return _click(first(closed))


@oracle("click-collapsible-2", "click-collapsible-2-nodelay")
def click_collapsible_2(page: Page) -> WebAction | None:
    """Open sections one by one until the target link is on the page, then click it."""
    link = first(find(page, cls="alink", text=page.field("target")))
    if link is not None:
        return Click(link.ref)
    headers = find(page, cls="ui-accordion-header")
    active = [h for h in headers if "ui-accordion-header-active" in h.classes.split()]
    if active:
        siblings = page.children(active[0].parent)
        at = siblings.index(active[0])
        panel = siblings[at + 1] if at + 1 < len(siblings) else None
        if panel is None or "ui-accordion-content" not in panel.classes.split() or \
                not (panel.text or page.children(panel.ref)):
            return SETTLE  # the section is still opening: its content is not on the page yet
    untried = [h for h in headers if not h.tampered and h not in active]
    return _click(first(untried))


@oracle("use-autocomplete", "use-autocomplete-nodelay")
def use_autocomplete(page: Page) -> WebAction | None:
    """Type the start, pick the menu item with the right end, submit."""
    start, end = page.field("start"), page.field("end")
    box = first(find(page, tag="input_text"))
    if box is None:
        return None
    value = box.value or ""
    items = [e for e in page.elements if e.actionable and "ui-menu-item-wrapper" in e.classes.split()]
    match = first([e for e in items if e.text.startswith(start) and e.text.endswith(end)])
    # jQuery UI announces the menu in a live region: once it has, the menu was shown (and picked from)
    announced = any(_descendants(page, r.ref, cls="") or r.text for r in find(page, cls="ui-helper-hidden-accessible"))
    if value.startswith(start) and value.endswith(end) and (value != start or (announced and match is None)):
        return _click(submit_button(page))  # ("Sud", "udan") -> "Sudan"; ("Chad", "had") -> "Chad"
    if match is not None:
        return Click(match.ref)
    if not value:
        return Type(box.ref, start)
    return SETTLE if value == start else None  # the menu has not opened yet


@oracle("read-table-2")
def read_table_2(page: Page) -> WebAction | None:
    cells = [e for e in page.elements if e.tag == "td"]
    values = {}
    for key in cells:
        row = [c for c in page.children(key.parent) if c.tag == "td"]
        if len(row) == 2 and row[0].ref == key.ref:
            values[key.text.strip()] = row[1].text.strip()
    entries = []
    for box in find(page, tag="input_text"):
        label = label_text(page, box).strip().rstrip(":").strip()
        if label not in values:
            return None
        entries.append((box, values[label]))
    return fill_then_submit(page, entries) if entries else None


@oracle("odd-or-even")
def odd_or_even(page: Page) -> WebAction | None:
    for row in find(page, cls="row"):
        buttons = [b for col in page.children(row.ref) for b in page.children(col.ref) if b.tag == "button"]
        numbers = [e for col in page.children(row.ref) for e in page.children(col.ref) if "display-number" in e.classes]
        if not numbers or len(buttons) != 2:
            return None
        if any(b.tampered for b in buttons):
            continue
        want = "odd" if int(numbers[0].text) % 2 else "even"
        return _click(first([b for b in buttons if want in b.classes.split()]))
    return _click(first(find(page, tag="button", id="submit")))


_TERM = re.compile(r"^[-+]?\s*(\d+|x)$")


def _linear_solution(problem: str) -> int | None:
    """Solve "a + x = b", "x - a = b", "a - x = b", ... (x appears once, coefficient +-1)."""
    if problem.count("=") != 1 or problem.count("x") != 1 or not re.fullmatch(r"[\dx+\-= ]+", problem):
        return None
    left, right = problem.split("=")

    def value(side: str, x: int) -> int:
        terms = re.findall(r"[-+]?\s*(?:\d+|x)", side.replace(" ", ""))
        return sum((-1 if t.startswith("-") else 1) * (x if t.lstrip("+-") == "x" else int(t.lstrip("+-"))) for t in terms)

    f0 = value(left, 0) - value(right, 0)
    slope = value(left, 1) - value(right, 1) - f0
    return -f0 // slope if slope in (1, -1) else None


@oracle("simple-algebra")
def simple_algebra(page: Page) -> WebAction | None:
    problem = first(find(page, id="math-problem"))
    answer = _linear_solution(problem.text) if problem else None
    if answer is None:
        return None
    return fill_then_submit(page, [(first(find(page, id="math-answer")), str(answer))])


@oracle("form-sequence-2")
def form_sequence_2(page: Page) -> WebAction | None:
    radios, boxes = find(page, tag="input_radio"), find(page, tag="input_text")
    r, t = int(page.field("radio target") or 0) - 1, int(page.field("textbox target") or 0) - 1
    if not (0 <= r < len(radios) and 0 <= t < len(boxes)):
        return None
    if not radios[r].value:
        return Click(radios[r].ref)
    return fill_then_submit(page, [(boxes[t], page.field("textbox text"))])


@oracle("phone-book")
def phone_book(page: Page) -> WebAction | None:
    """Page through the contacts until the name shows, then click the asked-for property."""
    name, target = page.field("name"), page.field("target")
    target = {"phone number": "phone", "email address": "email"}.get(target, target)
    card = first([e for e in find(page, cls="name") if e.text == name])
    if card is not None:
        return _click(first(_descendants(page, card.parent, cls=target)))
    nxt = first([e for e in find(page, cls="page-link") if "next" in getattr(page.get(e.parent), "classes", "").split()])
    return _click(nxt)
