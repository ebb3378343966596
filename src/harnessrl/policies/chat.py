"""Incremental chat-template encoding: each turn appends token ids, the history is never re-tokenised.

Re-tokenising a whole conversation every turn is a known source of drift in multi-turn
trainers: the tokens a model generated are not always the tokens its decoded text encodes
to, so the context it is trained on differs from the one it acted in. Here the context of
an episode is kept as token ids, and each turn only the *new* text is tokenised:

    full = render(messages, add_generation_prompt=True)        # text, cheap (no tokenising)
    if full starts with the text of the cached context:
        append encode(full[len(cached_text):])                 # closing tags, new messages, generation prompt
    else:                                                      # the harness rewrote history
        cut at the segment holding the first difference, replay the later turns from there

Segments are the pieces the context was built from — prompt text tokenised at one boundary,
or tokens the model generated. Cutting at a segment boundary and replaying the later turns
(their prompt text tokenised from the same boundaries, their generated tokens kept where
the new text still holds them) gives exactly the tokens an incremental encoding of the new
history would have given; the generated tokens before the change stay as they were sampled.

What the policy reads is text, whoever wrote it: a tool result, a file or a program's request
that prints `<|im_start|>assistant` must not become a turn of the conversation. So a render
knows where the template's own control tokens are (`Rendered.marks`), and only those encode as
special ids; everything else, every message content included, is encoded with the tokenizer's
special-token parsing off (`encode_text`), so special text there becomes ordinary text pieces.
Without special text in the contents this is the tokenizer's own encoding of the whole render:
it splits at special tokens first and encodes the pieces between them independently too.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any

from harnessrl.config import ConfigError


@dataclass(slots=True)
class Segment:
    text_start: int
    token_start: int
    generated: bool
    n_messages: int = 0  # generated segments: how many messages the prompt before it rendered


@dataclass(slots=True, frozen=True)
class Rendered:
    """A chat-template render and the spans of it that are the template's control tokens."""

    text: str
    marks: tuple[tuple[int, int], ...] = ()  # (start, end) of each marker, in order


@dataclass(slots=True)
class Encoded:
    """The context for this turn: its token ids, what is new, and how much of the old was kept."""

    ids: list[int]  # the whole context the model will continue
    new_ids: list[int]  # ids[keep:], the tokens this turn adds before generating
    keep: int  # tokens of the previous context kept (== its length unless history was rewritten)
    rewritten: bool


@dataclass(slots=True)
class EpisodeContext:
    """Per-episode cache stored in `AgentState.cache["lm"]`."""

    ids: list[int] = field(default_factory=list)
    text: str = ""
    segments: list[Segment] = field(default_factory=list)
    resets: list[tuple[int, int]] = field(default_factory=list)  # (turn index, tokens kept)
    n_messages: int = 0  # messages rendered by the last update


class ChatEncoder:
    """Renders conversations with the tokenizer's chat template and tokenises them incrementally."""

    def __init__(self, tokenizer: Any, name: str = "tokenizer"):
        if not getattr(tokenizer, "chat_template", None):
            raise ConfigError(
                f"{name}: the tokenizer has no chat template, so multi-turn conversations cannot be rendered; "
                "use an instruct/chat model or set tokenizer.chat_template (see harnessrl.policies.tiny.CHAT_TEMPLATE)"
            )
        self.tokenizer, self.name = tokenizer, name
        # special added tokens only: non-special ones (Qwen's <tool_call>) are vocabulary the model writes itself
        added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
        specials = {t.content: int(i) for i, t in added.items() if getattr(t, "special", False)}
        for tok in getattr(tokenizer, "all_special_tokens", []) or []:
            tid = tokenizer.convert_tokens_to_ids(tok)
            if isinstance(tid, int) and tid != tokenizer.unk_token_id:
                specials.setdefault(tok, tid)
        self.special_ids = specials
        longest = sorted(specials, key=len, reverse=True)  # a longer marker wins where two start at one place
        self._special_re = re.compile("|".join(map(re.escape, longest))) if longest else None
        # the stand-in for special text in a content while the markers are located: one character,
        # not blank (a template's strip/trim treats it like the text it stands for), in no marker
        self._fill = next((c for c in "x#_~@" if not any(c in t for t in specials)), "\x00")

    def render(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)

    def render_marked(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> Rendered:
        """The render, with the spans of the template's own markers.

        Special text inside a message is replaced by a same-length stand-in and the template
        rendered again: every special token left in that render is one the template wrote. A
        template that changes a content's length for what it holds cannot be lined up; it is
        refused rather than encoded with the contents' special text as control tokens.
        """
        text = self.render(messages, add_generation_prompt)
        if self._special_re is None:
            return Rendered(text)
        if not any(self._special_re.search(v) for m in messages for k, v in m.items() if k != "role" and isinstance(v, str)):
            return Rendered(text, self._spans(text))
        shape = self.render([{k: self._blank(v) if k != "role" and isinstance(v, str) else v for k, v in m.items()}
                             for m in messages], add_generation_prompt)
        if len(shape) != len(text) or any(c != d and c != self._fill for c, d in zip(shape, text)):
            raise ConfigError(f"{self.name}: the chat template changes message contents that hold special-token "
                              "text, so its own markers cannot be told from the contents'")
        return Rendered(text, self._spans(shape))

    def _blank(self, value: str) -> str:
        # until none is left: a replacement never creates a marker, but overlapping ones are replaced in turn
        while self._special_re.search(value):
            value = self._special_re.sub(lambda m: self._fill * len(m.group()), value)
        return value

    def _spans(self, text: str) -> tuple[tuple[int, int], ...]:
        return tuple(m.span() for m in self._special_re.finditer(text))

    def encode_text(self, text: str) -> list[int]:
        """Plain text: special-token text in it becomes ordinary text pieces, never a control token."""
        return list(self.tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])

    def encode_rendered(self, r: Rendered, start: int = 0, end: int | None = None) -> list[int]:
        """r.text[start:end]: the template's markers as their ids, the text between them as plain text."""
        end = len(r.text) if end is None else end
        ids: list[int] = []
        pos = start
        for a, b in r.marks[bisect.bisect_left(r.marks, (start, start)):]:
            if b > end:
                break
            if a > pos:
                ids += self.encode_text(r.text[pos:a])
            ids.append(self.special_ids[r.text[a:b]])
            pos = b
        if pos < end:
            ids += self.encode_text(r.text[pos:end])
        return ids

    def encode_chat(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> list[int]:
        """The whole conversation's ids, as the policy is conditioned on them (contents as text)."""
        return self.encode_rendered(self.render_marked(messages, add_generation_prompt))

    def retokenize(self, ids: list[int]) -> list[int]:
        """Ids decoded and encoded again the way this encoder encodes: special ids stay, the runs between them
        are re-encoded as text (the check that a record is a fresh tokenisation of its own text)."""
        specials = set(self.special_ids.values())
        out: list[int] = []
        run: list[int] = []
        for t in list(ids) + [None]:
            if t is None or t in specials:
                if run:
                    out += self.encode_text(self.decode(run))
                    run = []
                if t is not None:
                    out.append(int(t))
            else:
                run.append(int(t))
        return out

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)

    # -- the per-turn step ---------------------------------------------------------------

    def update(self, ctx: EpisodeContext, messages: list[dict[str, str]]) -> Encoded:
        """Bring `ctx` up to `messages` (ending with a generation prompt); returns the context to continue."""
        rendered = self.render_marked(messages, add_generation_prompt=True)
        full = rendered.text
        ctx.n_messages = len(messages)
        had = bool(ctx.segments)  # read before _rewind, which may cut every segment (a change in the first one)
        if had and full.startswith(ctx.text):
            keep, rewritten = len(ctx.ids), False
        else:
            keep, rewritten = self._rewind(ctx, messages, full), had
        self._append_prompt(ctx, rendered)
        return Encoded(ids=ctx.ids, new_ids=ctx.ids[keep:], keep=keep, rewritten=rewritten)

    def append_generated(self, ctx: EpisodeContext, token_ids: list[int], text: str) -> None:
        """Record the tokens the model generated (kept verbatim) and their decoded text."""
        if token_ids:
            ctx.segments.append(Segment(len(ctx.text), len(ctx.ids), True, ctx.n_messages))
            ctx.ids.extend(int(t) for t in token_ids)
            ctx.text += text

    def _append_prompt(self, ctx: EpisodeContext, rendered: Rendered) -> None:
        """The part of `rendered` after the cached text (which it starts with), markers as their ids."""
        start = len(ctx.text)
        ids = self.encode_rendered(rendered, start) if len(rendered.text) > start else []
        if ids:
            ctx.segments.append(Segment(start, len(ctx.ids), False))
            ctx.ids.extend(ids)
        ctx.text += rendered.text[start:]

    def _rewind(self, ctx: EpisodeContext, messages: list[dict[str, str]], full: str) -> int:
        """History was rewritten: cut at the segment holding the first difference, then replay.

        The replay rebuilds what an incremental encoding of the *new* history would have built:
        each later turn's prompt text is tokenised from the same boundary, and each later
        generation keeps its sampled tokens when the new text still contains it unchanged.
        Returns how many tokens of the old context were kept as a prefix.
        """
        if not ctx.segments:
            return 0
        first = self._cut_segment(ctx, full)
        bounds = [(s.token_start, s.text_start) for s in ctx.segments[1:]] + [(len(ctx.ids), len(ctx.text))]
        later = [(s.n_messages, ctx.ids[s.token_start:t1], ctx.text[s.text_start:x1])
                 for s, (t1, x1) in zip(ctx.segments[first:], bounds[first:]) if s.generated]
        cut = ctx.segments[first]
        del ctx.ids[cut.token_start:]
        ctx.text = ctx.text[:cut.text_start]
        del ctx.segments[first:]
        for n, tokens, text in later:
            marked = self.render_marked(messages[:n], add_generation_prompt=True) if 0 < n <= len(messages) else None
            prompt = marked.text if marked is not None else None
            if prompt is None or not prompt.startswith(ctx.text) or not full.startswith(prompt):
                break
            self._append_prompt(ctx, marked)
            if full.startswith(text, len(ctx.text)):
                ctx.segments.append(Segment(len(ctx.text), len(ctx.ids), True, n))
                ctx.ids.extend(tokens)
                ctx.text += text
        return cut.token_start

    @staticmethod
    def _cut_segment(ctx: EpisodeContext, full: str) -> int:
        """Index of the segment holding the first character where `full` and the cached text differ."""
        n = min(len(full), len(ctx.text))
        same, step = 0, 4096  # compare in blocks: histories are long and the change is usually late
        while same < n and full[same:same + step] == ctx.text[same:same + step]:
            same += step
        same = min(same, n)
        while same < n and full[same] == ctx.text[same]:
            same += 1
        return max(i for i, s in enumerate(ctx.segments) if s.text_start <= same)
