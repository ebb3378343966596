"""Token records from an upstream OpenAI-compatible server, and the same fields written by ours.

Forward mode (`--policy forward:URL`, `harnessrl gateway serve --forward URL`) sends each call
to another server. Training rows need the tokens the model acted on, and a plain OpenAI answer
carries only text, so each forwarded request asks for them in the shape vLLM's server returns:

    {"logprobs": true, "return_token_ids": true, "return_tokens_as_token_ids": true}
    -> response["prompt_token_ids"]                      the prompt as the upstream tokenised it
       choices[0]["token_ids"]                           the sampled ids (the end token included)
       choices[0]["logprobs"]["content"][i]["logprob"]   one per sampled token ("token_id:N" tokens)

`return_token_ids` is vLLM 0.10.2 and later; older vLLM gives ids only inside the log-prob
tokens (`return_tokens_as_token_ids`); a hosted API gives log-probs with token *strings* and
no prompt ids. `read_tokens` takes what there is and says which (`source`); nothing is guessed
(no re-tokenising here: the upstream's tokenizer is the only one that knows its ids).

`turn_record` turns the upstream's per-call prompt into the per-turn layout every policy
records (policies/base.py `Action`): the prompt tokens this call adds to the episode's context
(mask 0), then the sampled ones (mask 1). The upstream re-tokenises the whole conversation on
each call, so when its prompt does not extend the previous call's prompt + completion token for
token (a program rewrote its history, or re-tokenisation differs), the context restarts from
the longest common prefix and the turn is listed as a reset, as `LMPolicy` does.

The other direction, for `harnessrl gateway serve` answering as an upstream itself: `wire_fields`
writes the same fields from an in-process policy's action when the request asks for them, so
our gateway in front of SmolLM2 is an upstream forward mode can record (scripts/forward_tokens.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

#: what a forwarded request adds, strongest first; a 400 steps down to the next (endpoint.ForwardPolicy)
TOKEN_OPTIONS: dict[str, dict[str, Any]] = {
    "vllm": {"logprobs": True, "return_token_ids": True, "return_tokens_as_token_ids": True},
    "logprobs": {"logprobs": True},
    "none": {},
}
LADDER = ("vllm", "logprobs", "none")


@dataclass(slots=True)
class UpstreamTokens:
    """What one upstream answer said about its tokens (None: it did not say)."""

    prompt_ids: list[int] | None
    completion_ids: list[int] | None
    logprobs: list[float] | None
    source: str  # "token_ids" | "logprob_tokens" | "logprobs_only" | "none"


def _id_of(token: Any) -> int | None:
    if isinstance(token, str) and token.startswith("token_id:"):
        try:
            return int(token[len("token_id:"):])
        except ValueError:
            return None
    return None


def read_tokens(response: dict[str, Any]) -> UpstreamTokens:
    """The token fields of one chat-completion response (a dict, as JSON-decoded)."""
    choice = (response.get("choices") or [{}])[0] or {}
    content = ((choice.get("logprobs") or {}).get("content")) or None
    lps = [float(c["logprob"]) for c in content] if content else None
    prompt = response.get("prompt_token_ids")
    prompt = [int(t) for t in prompt] if isinstance(prompt, list) else None
    ids = choice.get("token_ids")
    if isinstance(ids, list):
        return UpstreamTokens(prompt, [int(t) for t in ids], lps, "token_ids")
    if content:
        from_tokens = [_id_of(c.get("token")) for c in content]
        if all(t is not None for t in from_tokens):
            return UpstreamTokens(prompt, from_tokens, lps, "logprob_tokens")  # type: ignore[arg-type]
        return UpstreamTokens(prompt, None, lps, "logprobs_only")
    return UpstreamTokens(prompt, None, None, "none")


@dataclass(slots=True)
class TurnTokens:
    token_ids: np.ndarray
    logprobs: np.ndarray
    loss_mask: np.ndarray
    keep: int  # tokens of the episode's previous context this call kept
    rewritten: bool  # the call's prompt did not extend the previous context


def turn_record(context: list[int], tok: UpstreamTokens) -> TurnTokens | None:
    """The turn's tokens (module docstring); `context` (the episode's ids so far) is extended in place.
    None when the upstream gave no prompt ids or no sampled ids: then no row can be built."""
    if tok.prompt_ids is None or tok.completion_ids is None:
        return None
    prompt, gen = tok.prompt_ids, tok.completion_ids
    keep = 0
    for a, b in zip(context, prompt):
        if a != b:
            break
        keep += 1
    rewritten = bool(context) and keep < len(context)
    new = prompt[keep:]
    lps = list(tok.logprobs or [])
    # an upstream that scores fewer tokens than it returns (none for the end token) leaves them at 0
    lps = (lps + [0.0] * len(gen))[: len(gen)]
    del context[keep:]
    context.extend(new + gen)
    return TurnTokens(
        token_ids=np.asarray(new + gen, np.int32),
        logprobs=np.concatenate([np.zeros(len(new), np.float32), np.asarray(lps, np.float32)]),
        loss_mask=np.concatenate([np.zeros(len(new), np.int8), np.ones(len(gen), np.int8)]),
        keep=keep, rewritten=rewritten)


# -- our gateway as an upstream: the same fields, written ---------------------------------------


def wire_fields(action: Any, request: dict[str, Any], tokenizer: Any = None) -> dict[str, Any]:
    """Reply fields (`logprobs`, `token_ids`, `prompt_token_ids`) for a request that asked for them,
    from an in-process policy's action answering the call as a fresh episode (every token_id of
    mask 0 is the prompt). {} when the request asked for none or the action has no tokens."""
    want_lp, want_ids = bool(request.get("logprobs")), bool(request.get("return_token_ids"))
    ids, mask = np.asarray(action.token_ids), np.asarray(action.loss_mask)
    if not (want_lp or want_ids) or not len(ids):
        return {}
    gen, prompt = ids[mask == 1].tolist(), ids[mask == 0].tolist()
    out: dict[str, Any] = {}
    if want_ids:
        out["token_ids"], out["prompt_token_ids"] = gen, prompt
    if want_lp:
        as_ids = bool(request.get("return_tokens_as_token_ids")) or tokenizer is None
        lps = np.asarray(action.logprobs)[mask == 1].tolist()
        content = []
        for t, lp in zip(gen, lps):
            token = f"token_id:{t}" if as_ids else tokenizer.decode([t], skip_special_tokens=False)
            content.append({"token": token, "logprob": float(lp), "bytes": list(token.encode()), "top_logprobs": []})
        out["logprobs"] = {"content": content}
    return out


def answer_call(gateway: Any, call: Any, policy: Any, issued: dict[str, str], n: int) -> Any:
    """Answer one gateway call with `policy`, the call a fresh episode of its own (`harnessrl gateway
    serve`): forward mode's upstream answer goes back as it came; an in-process policy's text is parsed
    for tool calls; token fields are added when the request asked for them. Returns the action."""
    from harnessrl.gateway.openai_wire import call_limits, cut_at_stop
    from harnessrl.harness._program_wire import to_reply, to_text, upstream_reply
    from harnessrl.policies.base import AgentState

    cap, stop = call_limits(call.request)  # honoured as in an episode (harness/program.py)
    state = AgentState(messages=to_text(call.request, issued), harness_id="gateway", task_id="serve", turn=n,
                       episode_key=f"call-{n}", request=call.request, max_tokens=cap, stop=stop)
    try:
        action = policy.act([state])[0]
    finally:
        policy.end_episode(state)
    upstream = action.info.get("upstream_message")
    stopped = False
    if upstream is not None:
        reply = upstream_reply(upstream, action.info.get("finish_reason"))
    else:
        text, stopped = cut_at_stop(action.text, stop)
        reply = to_reply(text, call.request, issued)[0]
    if upstream is None and not reply.tool_calls:
        reply.finish_reason = "length" if action.truncated and not stopped else "stop"
    reply.prompt_tokens = int(action.prompt_tokens)
    reply.completion_tokens = int(np.sum(action.loss_mask)) if len(action.loss_mask) else \
        int(action.info.get("completion_tokens", 0))
    # a forwarded call is a fresh episode too: its record is the upstream's prompt + sampled ids, passed on
    for k, v in wire_fields(action, call.request, getattr(policy, "tokenizer", None)).items():
        setattr(reply, k, v)
    gateway.answer(call, reply)
    return action
