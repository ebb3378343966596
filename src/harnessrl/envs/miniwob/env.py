"""`MiniWoBEnv`: one real MiniWoB++ task page in headless Chromium, seen as `Page`s, driven by `WebAction`s.

The adapter sits on miniwob's own `MiniWoBEnvironment` (reset, step, reward, JS task code all
unchanged); only the browser start-up is ours (browser.py). A harness calls

    page = env.reset(seed)                  # Page: utterance, fields, elements with refs
    result = env.step(Click(ref))           # StepResult: page, reward, raw_reward, done, reason
    tree = env.accessibility_tree()         # Chromium's AX tree for the current page, on demand

and `env.set_task(name)` reuses the same browser for another task (a page load, ~100 ms,
instead of a new browser, ~1 s). Rewards: `reward` is miniwob's time-discounted reward,
`raw_reward` the undiscounted one; both are 0 until the episode is done.
"""

from __future__ import annotations

import difflib
import time
from dataclasses import dataclass, replace
from typing import Any

from miniwob.action import ActionTypes
from miniwob.environment import MiniWoBEnvironment
from miniwob.fields import FIELD_EXTRACTORS, get_field_extractor

from harnessrl.envs.miniwob.browser import MINIWOB_TASK_DIR, ManagedInstance
from harnessrl.envs.miniwob.page import (
    MAX_WAIT_MS,
    AXNode,
    Click,
    Element,
    Page,
    PressKey,
    Type,
    Wait,
    WebAction,
    elements_from_dom,
)

#: Every MiniWoB++ task this miniwob install ships (FlightWoB excluded: it needs an HTTP server).
TASKS: tuple[str, ...] = tuple(sorted(p.stem for p in MINIWOB_TASK_DIR.glob("*.html") if p.stem in FIELD_EXTRACTORS))


_SELECTS_JS = """
return Array.from(document.querySelectorAll('select'))
  .filter(s => s.dataset.wob_ref !== undefined && s.dataset.wob_eps === 'e' + WOB_EPISODE_ID)
  .map(s => [+s.dataset.wob_ref, Array.from(s.options).map(o => o.text), s.selectedIndex, s.multiple,
              Array.from(s.selectedOptions).map(o => o.text)]);
"""


class ActionError(ValueError):
    """The action cannot run on this page (unknown ref, text run, unsupported key, episode over)."""


def check_task(task: str) -> str:
    if task not in TASKS:
        close = difflib.get_close_matches(task, TASKS, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else " See harnessrl.envs.miniwob.TASKS."
        raise ValueError(f"unknown MiniWoB task {task!r}.{hint}")
    return task


@dataclass(frozen=True, slots=True)
class StepResult:
    page: Page
    reward: float  # miniwob's reward, scaled by the time left; 0 until done
    raw_reward: float  # the same verdict without the time discount
    done: bool
    reason: Any = None  # miniwob's explanation of the reward, when it gives one
    elapsed: float = 0.0  # seconds since the episode started (browser clock of the step)


class _Environment(MiniWoBEnvironment):
    """miniwob's environment with harnessrl's browser instance."""

    def _hard_reset_instance(self) -> None:
        if getattr(self, "instance", None) is not None:
            self.instance.close()
        self.instance = ManagedInstance(index=0, **self.instance_kwargs)
        self.instance.start()


class MiniWoBEnv:
    """One browser, one MiniWoB task at a time. Use as a context manager or call `close()`."""

    def __init__(self, task: str, *, screenshots: bool = False, data_mode: str = "train", settle_ms: float = 0.0) -> None:
        self._task = check_task(task)
        self._env = _Environment(
            subdomain=task, action_space_config="all_supported", data_mode=data_mode
        )
        # Text harnesses never look at pixels; a screenshot costs more than the step itself.
        self._env.set_record_screenshots(screenshots)
        types = self._env.action_space_config.action_types
        self._click = types.index(ActionTypes.CLICK_ELEMENT)
        self._type = types.index(ActionTypes.FOCUS_ELEMENT_AND_TYPE_TEXT)
        self._press = types.index(ActionTypes.PRESS_KEY)
        self._keys = list(self._env.action_space_config.allowed_keys)
        self._page: Page | None = None
        self._done = True
        self._ax_absent: set[int] = set()  # refs this episode's AX tree leaves out for good (see accessibility_tree)
        #: pause after each action before the page is read (raw miniwob's wait_ms): lets
        #: animations (accordions, menus) finish so the observation is not stale
        self.settle_ms = float(settle_ms)
        self.episode_start = 0.0
        self._read_time_limit()

    # ------------------------------------------------------------------ lifecycle
    @property
    def task(self) -> str:
        return self._task

    @property
    def instance(self) -> ManagedInstance:
        return self._env.instance

    @property
    def alive(self) -> bool:
        return self._env.instance.alive

    @property
    def pids(self) -> list[int]:
        """chromedriver and its Chromium processes (for leak checks)."""
        return self._env.instance.pids

    def set_task(self, task: str) -> None:
        """Switch this browser to another task page (no new browser)."""
        if check_task(task) == self._task:
            return
        self._env.instance.open_task(task, get_field_extractor(task))
        self._env.subdomain = task
        self._env.instance_kwargs["subdomain"] = task
        self._task = task
        self._page, self._done = None, True
        self._read_time_limit()

    def close(self) -> None:
        self._env.instance.close()

    def __enter__(self) -> MiniWoBEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ episode
    def _read_time_limit(self) -> None:
        """The page's own episode time limit (10 s in most tasks, more in a few)."""
        self._page_limit_ms = self._limit_ms = float(
            self._env.instance.driver.execute_script("return core.EPISODE_MAX_TIME;")
        )

    def reset(self, seed: int, time_limit_s: float | None = None) -> Page:
        """Start an episode. `time_limit_s` replaces the page's time limit for this episode
        (MiniWoB ends an episode with -1 when it runs out, and discounts the reward by the
        time used); policies slower than a person (an LM on a CPU) need more than 10 s."""
        want = self._page_limit_ms if time_limit_s is None else 1000.0 * float(time_limit_s)
        if want <= 0:
            raise ValueError(f"time_limit_s must be > 0, got {time_limit_s}")
        if want != self._limit_ms:
            self._env.instance.driver.execute_script("core.EPISODE_MAX_TIME = arguments[0];", want)
            self._limit_ms = want
        obs, info = self._env.reset(seed=int(seed))
        self.episode_start = time.perf_counter()
        self._done = False
        self._ax_absent = set()
        self._page = self._make_page(obs, info, done=False)
        return self._page

    def step(self, action: WebAction, settle_ms: float | None = None) -> StepResult:
        """Run `action`, pause `settle_ms` (default: `self.settle_ms`), read the page.
        `Wait(ms)` runs no action: it pauses `ms`, then reads the page (MiniWoB's clock runs on)."""
        self._check(action)
        settle = self.settle_ms if settle_ms is None else float(settle_ms)
        if settle < 0:
            raise ValueError(f"settle_ms must be >= 0, got {settle}")
        if isinstance(action, Wait):
            time.sleep(action.ms / 1000.0)
        self._env.instance.wait_ms = settle  # miniwob's own pause between perform and observe
        obs, reward, done, _, info = self._env.step(None if isinstance(action, Wait) else self._to_miniwob(action))
        self._done = bool(done)
        self._page = self._make_page(obs, info, done=self._done)
        return StepResult(
            page=self._page,
            reward=float(reward),
            raw_reward=float(info.get("raw_reward") or 0.0) if done else 0.0,
            done=self._done,
            reason=info.get("reason"),
            elapsed=float(info.get("elapsed", 0.0)),
        )

    @property
    def page(self) -> Page | None:
        return self._page

    def _make_page(self, obs: dict, info: dict, done: bool) -> Page:
        root = info.get("root_dom")
        elements = elements_from_dom(root) if root is not None and not done else ()
        if any(e.tag == "select" for e in elements):
            elements = self._with_select_options(elements)
        return Page(
            task=self._task,
            utterance=obs.get("utterance", ""),
            fields=tuple(tuple(f) for f in obs.get("fields", ())),
            elements=elements,
            done=done,
        )

    def _with_select_options(self, elements: tuple[Element, ...]) -> tuple[Element, ...]:
        """A select's option texts, selection and `multiple` flag. miniwob's DOM walk skips the
        <option>s of a drop-down (they have no box) but lists those of a list box (`multiple`,
        `size`) as elements of their own; `value` is the selected text, or for `multiple` the
        tuple of selected texts."""
        selects = {
            ref: (tuple(options), tuple(chosen) if multiple else (options[index] if 0 <= index < len(options) else ""),
                  bool(multiple))
            for ref, options, index, multiple, chosen in self._env.instance.driver.execute_script(_SELECTS_JS)
        }
        return tuple(
            replace(e, options=selects[e.ref][0], value=selects[e.ref][1], multiple=selects[e.ref][2])
            if e.ref in selects else e
            for e in elements
        )

    def _check(self, action: WebAction) -> None:
        if self._page is None or self._done:
            raise ActionError("the episode is over; call reset(seed) first")
        if isinstance(action, (Click, Type)):
            element = self._page.get(action.ref)
            if element is None:
                raise ActionError(f"no element with ref {action.ref} on the page")
            if not element.actionable:
                raise ActionError(f"ref {action.ref} is a text run; act on its parent element {element.parent}")
        elif isinstance(action, PressKey):
            if action.key not in self._keys:
                raise ActionError(f"unsupported key {action.key!r}; allowed: {' '.join(self._keys[:12])} ...")
        elif isinstance(action, Wait):
            if not 0 < action.ms <= MAX_WAIT_MS:
                raise ActionError(f"wait {action.ms} ms: wait between 1 and {MAX_WAIT_MS} ms")
        else:
            raise ActionError(f"not a MiniWoB action: {action!r}")

    def _to_miniwob(self, action: WebAction) -> dict[str, Any]:
        # Built directly: create_action() samples the whole action space (a 64-char string) per call.
        if isinstance(action, Click):
            return {"action_type": self._click, "ref": action.ref}
        if isinstance(action, Type):
            return {"action_type": self._type, "ref": action.ref, "text": action.text}
        return {"action_type": self._press, "key": self._keys.index(action.key)}

    # ------------------------------------------------------------------ accessibility tree
    def accessibility_tree(self) -> list[AXNode]:
        """Chromium's accessibility tree of the current page, nodes tied to miniwob refs.

        Two DevTools calls: the full AX tree, and the DOM (for each node's `data-wob_ref`).
        Ignored nodes are dropped; their children move up. Only refs on the current `Page` count.
        """
        if self._page is None or self._done:
            return []
        driver = self._env.instance.driver
        # Chromium updates its accessibility tree a frame or so after the DOM changes: an element
        # that just appeared (an autocomplete menu under load) can be on the Page snapshot but not
        # yet in the AX tree. Read again briefly while a visible element with a ref is missing.
        # Some elements are left out of the AX tree for good (plain spans, labels folded into their
        # input): once a read has settled, those are remembered for the episode and not waited for.
        visible = {e.ref for e in self._page.elements if e.actionable and e.width > 0 and e.height > 0}
        for attempt in range(AX_READS):
            ax = driver.execute_cdp_cmd("Accessibility.getFullAXTree", {})["nodes"]
            dom = driver.execute_cdp_cmd("DOM.getDocument", {"depth": -1, "pierce": False})["root"]
            refs, hidden, svgs = _scan_dom(dom, self._page)
            nodes = _ax_nodes(ax, refs, hidden, svgs)
            missing = (visible & set(refs.values())) - {n.ref for n in nodes if n.ref is not None}
            if not missing - self._ax_absent or attempt == AX_READS - 1:
                self._ax_absent |= missing
                return nodes
            time.sleep(AX_RETRY_S)
        return nodes


#: At most this many reads of the AX tree while it lags the DOM (see accessibility_tree), this far apart.
AX_READS, AX_RETRY_S = 3, 0.03

#: Page parts miniwob keeps out of the observation (reward display, the utterance box, overlays).
_NOT_TASK = frozenset({"reward-display", "sync-task-cover", "click-canvas", "query"})


#: SVG: Chromium's tree shows a drawing as one bare "image" (its shapes are ignored nodes) or its
#: shapes as "graphics-symbol"/"generic" without their shape. Shape tasks need the shape (the tag)
#: and what tells shapes apart (colour, size, class), so an <svg> is listed from the DOM instead.
SVG_SHAPES = frozenset({"circle", "rect", "ellipse", "polygon", "polyline", "path", "line", "text"})
SVG_ATTRS = ("class", "fill", "stroke", "r", "width", "height", "font-size")


def _text_of(node: dict) -> str:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.get("nodeType") == 3:
            out.append(n.get("nodeValue", ""))
        stack.extend(reversed(n.get("children") or []))
    return " ".join("".join(out).split())


def _scan_dom(dom_root: dict, page: Page) -> tuple[dict[int, int], set[int], dict[int, list[tuple]]]:
    """backendNodeId -> miniwob ref for elements on `page`; backendNodeIds of the non-task parts;
    <svg> backendNodeId -> its shapes [(backendNodeId, tag, ((attr, value), ...), text)] in page order."""
    refs: dict[int, int] = {}
    hidden: set[int] = set()
    svgs: dict[int, list[tuple]] = {}
    stack: list[tuple[dict, int | None]] = [(dom_root, None)]
    while stack:
        node, svg_root = stack.pop()
        attrs = node.get("attributes") or []
        pairs = dict(zip(attrs[::2], attrs[1::2]))
        tag = str(node.get("localName") or "").lower()
        if tag == "svg" and svg_root is None:
            svg_root = node["backendNodeId"]
            svgs[svg_root] = []
        elif svg_root is not None and tag in SVG_SHAPES:
            keep = tuple((k, pairs[k]) for k in SVG_ATTRS if pairs.get(k))
            svgs[svg_root].append((node["backendNodeId"], tag, keep, _text_of(node) if tag == "text" else ""))
        ref = pairs.get("data-wob_ref", "")
        if ref.lstrip("-").isdigit() and page.get(int(ref)) is not None:
            refs[node["backendNodeId"]] = int(ref)
        if pairs.get("id") in _NOT_TASK:
            hidden.add(node["backendNodeId"])
        stack.extend((child, svg_root) for child in reversed(node.get("children") or []))
    return refs, hidden, svgs


def _svg_nodes(root_id: int, shapes: list[tuple], refs: dict[int, int], depth: int) -> list[AXNode]:
    out = [AXNode(role="svg", name="", depth=depth, ref=refs.get(root_id), tag="svg")]
    out.extend(AXNode(role=f"svg-{tag}", name=text, depth=depth + 1, ref=refs.get(bid), tag=tag, attrs=attrs)
               for bid, tag, attrs, text in shapes)
    return out


def _ax_value(node: dict, key: str) -> Any:
    return (node.get(key) or {}).get("value", "")


def _ax_nodes(nodes: list[dict], refs: dict[int, int], hidden: set[int], svgs: dict[int, list[tuple]] | None = None
              ) -> list[AXNode]:
    svgs = svgs or {}
    by_id = {n["nodeId"]: n for n in nodes}
    roots = [n for n in nodes if not n.get("parentId") or n["parentId"] not in by_id]
    out: list[AXNode] = []
    stack = [(n, 0, "") for n in reversed(roots)]
    while stack:
        node, depth, parent_name = stack.pop()
        if node.get("backendDOMNodeId") in hidden:
            continue
        child_depth = depth
        role = str(_ax_value(node, "role"))
        if role in ("InlineTextBox", "LineBreak"):  # layout detail, no content of its own
            continue
        name = str(_ax_value(node, "name")).strip()
        if role == "StaticText" and name == parent_name:  # a button's or link's own label, again
            continue
        if node.get("backendDOMNodeId") in svgs:  # a drawing: its shapes from the DOM, not Chromium's roles
            out.extend(_svg_nodes(node["backendDOMNodeId"], svgs[node["backendDOMNodeId"]], refs, depth))
            continue
        if not node.get("ignored"):
            if role not in ("none", "generic", "LabelText") or name or node.get("backendDOMNodeId") in refs:
                props = tuple(
                    (p["name"], p.get("value", {}).get("value"))
                    for p in node.get("properties", [])
                    if p["name"] in ("checked", "selected", "focused", "expanded", "disabled", "required")
                )
                out.append(
                    AXNode(
                        role=role,
                        name=name,
                        depth=depth,
                        ref=refs.get(node.get("backendDOMNodeId")),
                        value=str(_ax_value(node, "value")),
                        properties=props,
                    )
                )
                child_depth, parent_name = depth + 1, name
        children = [by_id[c] for c in node.get("childIds", []) if c in by_id]
        stack.extend((c, child_depth, parent_name) for c in reversed(children))
    return out
