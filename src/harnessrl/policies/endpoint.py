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
from typing import Any

from pydantic import Field

from harnessrl.config import Config, ConfigError
from harnessrl.policies.base import Action, AgentState, Policy


class EndpointError(RuntimeError):
    """The endpoint failed in a way retrying cannot fix (or retries ran out)."""


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
                raise EndpointError(f"{self.cfg.base_url} refused the request (HTTP {err.status_code}): "
                                    f"{self.scrub(str(err))}") from None
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
