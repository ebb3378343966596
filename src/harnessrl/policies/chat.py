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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harnessrl.config import ConfigError


@dataclass(slots=True)
class Segment:
    text_start: int
    token_start: int
    generated: bool
    n_messages: int = 0  # generated segments: how many messages the prompt before it rendered


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
        self.tokenizer = tokenizer

    def render(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)

    def encode_text(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)

    # -- the per-turn step ---------------------------------------------------------------

    def update(self, ctx: EpisodeContext, messages: list[dict[str, str]]) -> Encoded:
        """Bring `ctx` up to `messages` (ending with a generation prompt); returns the context to continue."""
        full = self.render(messages, add_generation_prompt=True)
        ctx.n_messages = len(messages)
        had = bool(ctx.segments)  # read before _rewind, which may cut every segment (a change in the first one)
        if had and full.startswith(ctx.text):
            keep, rewritten = len(ctx.ids), False
        else:
            keep, rewritten = self._rewind(ctx, messages, full), had
        self._append_prompt(ctx, full[len(ctx.text):])
        return Encoded(ids=ctx.ids, new_ids=ctx.ids[keep:], keep=keep, rewritten=rewritten)

    def append_generated(self, ctx: EpisodeContext, token_ids: list[int], text: str) -> None:
        """Record the tokens the model generated (kept verbatim) and their decoded text."""
        if token_ids:
            ctx.segments.append(Segment(len(ctx.text), len(ctx.ids), True, ctx.n_messages))
            ctx.ids.extend(int(t) for t in token_ids)
            ctx.text += text

    def _append_prompt(self, ctx: EpisodeContext, text: str) -> None:
        ids = self.encode_text(text) if text else []
        if ids:
            ctx.segments.append(Segment(len(ctx.text), len(ctx.ids), False))
            ctx.ids.extend(ids)
        ctx.text += text

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
            prompt = self.render(messages[:n], add_generation_prompt=True) if 0 < n <= len(messages) else None
            if prompt is None or not prompt.startswith(ctx.text) or not full.startswith(prompt):
                break
            self._append_prompt(ctx, prompt[len(ctx.text):])
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
