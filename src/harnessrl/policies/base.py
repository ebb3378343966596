"""Policy interface for agent rollouts.

A policy maps a batch of conversation states to a batch of actions. The rollout loop calls
`act` once per turn with every still-running episode of a group, so an LM policy can
generate a whole group at once with a KV cache, and a scripted policy can just loop.

LM policies keep their own per-episode token cache in `AgentState.cache` (keyed by the
episode): when the new `messages` extend the cached prefix, only the new messages are
tokenised and appended; when a harness rewrites history (SWE-agent collapses old
observations), the policy re-encodes from the first changed message.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(slots=True)
class AgentState:
    """What a policy sees at one turn of one episode."""

    messages: list[dict[str, str]]  # the conversation so far, ending with a user message
    harness_id: str
    task_id: str
    turn: int
    episode_key: str  # stable per episode within a rollout (for caches)
    seed: int = 0
    view: dict[str, Any] = field(default_factory=dict)  # structured state for scripted policies only
    harness: Any = None  # the Harness (scripted policies render intents through it)
    session: Any = None  # the Session (scripted policies may consult env state through it)
    task: Any = None  # the Task (scripted oracles read its solution)
    cache: dict[str, Any] = field(default_factory=dict)  # per-episode scratch space owned by the policy


@dataclass(slots=True)
class Action:
    """One turn's output. Token fields are empty for policies without tokens.

    token_ids: the tokens this turn added to the context — new observation tokens (mask 0)
    followed by generated tokens (mask 1); logprobs align with token_ids (0 where mask is 0).
    """

    text: str
    token_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    logprobs: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    loss_mask: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    prompt_tokens: int = 0  # total context length fed to the model this turn
    truncated: bool = False  # generation hit the token budget
    info: dict[str, Any] = field(default_factory=dict)


class Policy(ABC):
    """Anything that maps observations to actions: scripted, LM, endpoint."""

    policy_id: str = "policy"

    @abstractmethod
    def act(self, states: list[AgentState]) -> list[Action]:
        """One action per state, in order."""

    def end_episode(self, state: AgentState) -> None:
        """Called once when an episode ends (free caches)."""
        state.cache.clear()

    def close(self) -> None:
        """Release resources (endpoint clients, model memory)."""
