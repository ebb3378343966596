"""A policy served by any OpenAI-compatible chat endpoint (evaluation only: no log-probs needed).

    policy = EndpointPolicy(EndpointConfig(model="qwen2.5-coder", base_url="http://127.0.0.1:8000/v1"))
    harnessrl eval --policy endpoint:qwen2.5-coder --policy-option base_url=http://127.0.0.1:8000/v1 --suite code-v1

The API key is read from the environment variable named by `api_key_env` (default
OPENAI_API_KEY) when the policy starts; it is passed to the `openai` client and nowhere else:
not into configs, records, reports or logs (error texts are scrubbed of it), and never into
the sandbox (which starts from an empty environment). Rate limits (429), server errors (5xx),
timeouts and dropped connections are retried with exponential backoff (honouring
Retry-After); a rejected key (401/403) stops at once with an error naming the variable.
The states of one turn are sent concurrently (`concurrency` requests at a time).
"""

from __future__ import annotations

import os
import random
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from pydantic import Field

from harnessrl.config import Config, ConfigError
from harnessrl.policies.base import Action, AgentState, Policy


class EndpointError(RuntimeError):
    """The endpoint failed in a way retrying cannot fix (or retries ran out)."""

    status: int | None = None  # the HTTP status of a refused request, when there was one


class EndpointAuthError(EndpointError):
    """The endpoint rejected the API key."""


class EndpointConfig(Config):
    model: str = Field(..., description="Model name the endpoint serves.")
    base_url: str = Field(..., description="The endpoint's base URL, e.g. http://127.0.0.1:8000/v1.")
    api_key_env: str = Field("OPENAI_API_KEY", description="Environment variable holding the API key.")
    temperature: float = Field(0.0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    max_tokens: int = Field(1024, ge=1, description="Completion budget of one turn.")
    stop: list[str] | None = None
    timeout_s: float = Field(120.0, gt=0, description="Per-request timeout.")
    max_retries: int = Field(6, ge=0, description="Retries on 429/5xx/timeouts before giving up.")
    backoff_s: float = Field(1.0, ge=0, description="First retry delay; doubles each retry (with jitter).")
    max_backoff_s: float = Field(60.0, ge=0)
    concurrency: int = Field(4, ge=1, description="Requests in flight at once within a turn.")
    send_seed: bool = Field(True, description="Pass the episode seed as the request's `seed`.")


def from_spec(arg: str, options: dict[str, Any]) -> EndpointPolicy:
    """`--policy endpoint:MODEL` with options (base_url=..., api_key_env=..., ...)."""
    data = dict(options)
    if arg:
        data["model"] = arg
    data.setdefault("base_url", os.environ.get("OPENAI_BASE_URL", ""))
    if not data.get("base_url"):
        raise ConfigError("policy endpoint needs a base URL: --policy-option base_url=http://HOST:PORT/v1 (or set OPENAI_BASE_URL)")
    if "model" not in data:
        raise ConfigError("policy endpoint needs a model: --policy endpoint:MODEL")
    from harnessrl.policies.registry import _validate_options

    return EndpointPolicy(_validate_options(EndpointConfig, data, "endpoint"))


class EndpointPolicy(Policy):
    def __init__(self, cfg: EndpointConfig):
        import openai

        self.cfg = cfg
        self.policy_id = f"endpoint:{cfg.model}"
        key = os.environ.get(cfg.api_key_env)
        if not key:
            raise EndpointAuthError(f"no API key: set the environment variable {cfg.api_key_env} "
                                    f"(or choose another with --policy-option api_key_env=NAME)")
        self._secret = key
        # retries are ours (logged, scrubbed, Retry-After aware), so the client's are off
        self._client = openai.OpenAI(base_url=cfg.base_url, api_key=key, max_retries=0, timeout=cfg.timeout_s)
        self._openai = openai
        self._pool = ThreadPoolExecutor(max_workers=cfg.concurrency) if cfg.concurrency > 1 else None
        self.requests = 0
        self.retries = 0

    def scrub(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text

    def act(self, states: list[AgentState]) -> list[Action]:
        if self._pool is None or len(states) == 1:
            return [self._one(s) for s in states]
        return list(self._pool.map(self._one, states))

    def _one(self, state: AgentState) -> Action:
        # a call's own cap (a real program's max_tokens) applies below ours; its stop strings join ours
        cap = min(self.cfg.max_tokens, state.max_tokens or self.cfg.max_tokens)
        kwargs: dict[str, Any] = dict(model=self.cfg.model, messages=state.messages, temperature=self.cfg.temperature,
                                      top_p=self.cfg.top_p, max_tokens=cap)
        stop = list(dict.fromkeys([*(self.cfg.stop or ()), *state.stop]))
        if stop:
            kwargs["stop"] = stop[:4]  # the OpenAI API takes at most four
        if self.cfg.send_seed:
            kwargs["seed"] = int(state.seed)
        reply = self._request(kwargs)
        choice = reply.choices[0]
        usage = getattr(reply, "usage", None)
        text = choice.message.content or ""
        return Action(text, prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                      truncated=choice.finish_reason == "length",
                      info={"completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
                            "finish_reason": choice.finish_reason})

    def _request(self, kwargs: dict[str, Any]) -> Any:
        o = self._openai
        delay = self.cfg.backoff_s
        for attempt in range(self.cfg.max_retries + 1):
            self.requests += 1
            try:
                return self._client.chat.completions.create(**kwargs)
            except (o.AuthenticationError, o.PermissionDeniedError) as err:
                raise EndpointAuthError(
                    f"{self.cfg.base_url} rejected the API key from ${self.cfg.api_key_env} "
                    f"(HTTP {err.status_code}): check the key and the endpoint"
                ) from None
            except (o.RateLimitError, o.InternalServerError, o.APITimeoutError, o.APIConnectionError) as err:
                if attempt == self.cfg.max_retries:
                    raise EndpointError(f"{self.cfg.base_url}: still failing after {attempt + 1} attempts: "
                                        f"{self.scrub(str(err))}") from None
                wait = _retry_after(err) or min(self.cfg.max_backoff_s, delay * (1 + random.random() * 0.25))
                self.retries += 1
                time.sleep(wait)
                delay *= 2
            except o.APIStatusError as err:  # other 4xx: the request itself is wrong
                refused = EndpointError(f"{self.cfg.base_url} refused the request (HTTP {err.status_code}): "
                                        f"{self.scrub(str(err))}")
                refused.status = err.status_code
                raise refused from None
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
        self._client.close()


def _retry_after(err: Any) -> float | None:
    response = getattr(err, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return min(float(value), 120.0) if value is not None else None
    except ValueError:
        return None


# -- forward mode: the program's own request, sent to another server, its tokens recorded -------------


class ForwardConfig(EndpointConfig):
    model: str = Field("", description="Model name the upstream serves; empty: the first one its /models lists.")
    sampling: Literal["policy", "program"] = Field(
        "policy", description="policy: temperature, top_p and max_tokens of this config replace what a program "
        "asked for (as for every harnessrl policy); program: the program's own settings go upstream unchanged.")
    tokens: Literal["vllm", "logprobs", "none"] = Field(
        "vllm", description="Token fields asked of the upstream (policies/upstream_tokens.py); an upstream that "
        "refuses them (HTTP 400) is asked with the next weaker set.")
    concurrency: int = Field(8, ge=1, description="Requests in flight at once within a turn.")


def forward_from_spec(arg: str, options: dict[str, Any]) -> "ForwardPolicy":
    """`--policy forward:URL` (options: model=..., api_key_env=..., sampling=..., tokens=...)."""
    data = dict(options)
    if arg:
        data["base_url"] = arg
    url = str(data.get("base_url", ""))
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"policy forward needs the upstream's URL, got {url!r}: --policy forward:http://HOST:PORT/v1")
    from harnessrl.policies.registry import _validate_options

    return ForwardPolicy(_validate_options(ForwardConfig, data, "forward"))


class ForwardPolicy(EndpointPolicy):
    """Each turn goes to an OpenAI-compatible upstream; a program's call goes as the program sent it
    (tools, tool_choice, stop; `AgentState.request`), and its answer (content and tool calls) goes back
    to the program unchanged. The upstream's token ids and log-probs become the turn's record
    (upstream_tokens.py). A missing key sends "EMPTY" (a local vLLM without --api-key takes any)."""

    cfg: ForwardConfig

    def __init__(self, cfg: ForwardConfig):
        import openai

        self.cfg = cfg
        self._secret = os.environ.get(cfg.api_key_env, "")
        self._client = openai.OpenAI(base_url=cfg.base_url, api_key=self._secret or "EMPTY", max_retries=0,
                                     timeout=cfg.timeout_s)
        self._openai = openai
        self._pool = ThreadPoolExecutor(max_workers=cfg.concurrency) if cfg.concurrency > 1 else None
        self.requests = self.retries = 0
        self.model = cfg.model or self._first_model()
        self.policy_id = f"forward:{self.model}"
        self._level = cfg.tokens
        self._finished: dict[str, list[tuple[int, int]]] = {}

    def _first_model(self) -> str:
        o = self._openai
        try:
            models = [m.id for m in self._client.models.list()]
        except (o.APIConnectionError, o.APITimeoutError) as err:
            raise EndpointError(f"{self.cfg.base_url}: no upstream answers there ({self.scrub(str(err))}); "
                                "start it first or fix the URL") from None
        except o.APIStatusError as err:
            raise EndpointError(f"{self.cfg.base_url}/models answered HTTP {err.status_code}; name the model with "
                                "--policy-option model=NAME (and its key with api_key_env=VAR)") from None
        if not models:
            raise EndpointError(f"{self.cfg.base_url}/models lists no model; name it with --policy-option model=NAME")
        return str(models[0])

    def _body(self, state: AgentState) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        request = state.request
        if request is not None:  # a program's call: everything it asked for, but the model and the transport
            body = {k: v for k, v in request.items() if k not in ("model", "messages", "stream", "stream_options", "n")}
            messages = request["messages"]
        else:
            body, messages = {}, state.messages
        if self.cfg.sampling == "policy":
            body.pop("max_completion_tokens", None)
            body.update(temperature=self.cfg.temperature, top_p=self.cfg.top_p, max_tokens=self.cfg.max_tokens)
            if self.cfg.stop:
                body["stop"] = self.cfg.stop
        if self.cfg.send_seed:
            body.setdefault("seed", int(state.seed))
        return messages, body

    def _ask(self, messages: list[dict[str, Any]], body: dict[str, Any]) -> Any:
        from harnessrl.policies.upstream_tokens import LADDER, TOKEN_OPTIONS

        for level in LADDER[LADDER.index(self._level):]:
            try:
                reply = self._request(dict(model=self.model, messages=messages,
                                           extra_body={**body, **TOKEN_OPTIONS[level]}))
            except EndpointError as err:
                if err.status != 400 or level == "none":
                    raise
                continue
            self._level = level
            return reply
        raise AssertionError("unreachable")

    def _one(self, state: AgentState) -> Action:
        from harnessrl.harness._program_wire import render_calls
        from harnessrl.policies.upstream_tokens import read_tokens, turn_record

        messages, body = self._body(state)
        data = self._ask(messages, body).model_dump()
        choice = data["choices"][0]
        message = choice.get("message") or {}
        calls = [{"id": c["id"], "type": "function",
                  "function": {"name": c["function"]["name"], "arguments": c["function"].get("arguments") or ""}}
                 for c in message.get("tool_calls") or []]
        content = message.get("content") or ""
        text = content + ("\n" if content and calls else "") + render_calls(calls) if calls else content
        tok = read_tokens(data)
        turn = state.cache.get("upstream_calls", 0)
        state.cache["upstream_calls"] = turn + 1
        rec = turn_record(state.cache.setdefault("upstream", []), tok)
        usage = data.get("usage") or {}
        info = {"completion_tokens": int(usage.get("completion_tokens") or 0), "finish_reason": choice.get("finish_reason"),
                "upstream_message": {"content": message.get("content"), "tool_calls": calls},
                "token_source": tok.source, "token_options": self._level,
                **({k: body[k] for k in ("temperature", "top_p") if k in body})}
        if rec is None:
            return Action(text, prompt_tokens=int(usage.get("prompt_tokens") or 0),
                          truncated=choice.get("finish_reason") == "length", info=info)
        if rec.rewritten:
            state.cache.setdefault("upstream_resets", []).append((turn, rec.keep))
        info["keep"] = rec.keep
        return Action(text, token_ids=rec.token_ids, logprobs=rec.logprobs, loss_mask=rec.loss_mask,
                      prompt_tokens=len(tok.prompt_ids or ()), truncated=choice.get("finish_reason") == "length",
                      info=info)

    def end_episode(self, state: AgentState) -> None:
        resets = state.cache.get("upstream_resets")
        if resets:
            self._finished[state.episode_key] = list(resets)
        state.cache.clear()

    def pop_resets(self, episode_key: str) -> list[tuple[int, int]]:
        """(turn index, tokens kept) for each call whose upstream prompt did not extend the episode's context."""
        return self._finished.pop(episode_key, [])
