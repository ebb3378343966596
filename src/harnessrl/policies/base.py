"""Policy interface for agent rollouts.

A policy maps a batch of conversation states to a batch of actions. The rollout loop calls
`act` once per turn with every still-running episode of a group, so an LM policy can
generate a whole group at once with a KV cache, and a scripted policy can just loop.

LM policies keep their own per-episode token cache in `AgentState.cache` (keyed by the
episode): when the new `messages` extend the cached prefix, only the new messages are
tokenised and appended; when a harness rewrites history (SWE-agent collapses old
observations), the policy re-encodes from the first changed message.

What a policy may see is drawn here. `AgentState` holds only what the harness shows a model
(the rendered conversation and ids): no task object, session or harness, so a learned or
remote policy cannot read a task's solution or hidden tests. The scripted oracle family
declares `privileged = True` and gets one more field, `AgentState.privileged`: the live task,
session, harness and structured view it plans from. The rollout loop fills it for those
policies only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harnessrl.tasks.contract import TaskLike


@dataclass(slots=True)
class AgentState:
    """What a policy sees at one turn of one episode."""

    messages: list[dict[str, str]]  # the conversation so far, ending with a user message
    harness_id: str
    task_id: str
    turn: int
    episode_key: str  # stable per episode within a rollout (for caches)
    seed: int = 0
    cache: dict[str, Any] = field(default_factory=dict)  # per-episode scratch space owned by the policy
    privileged: Privileged | None = None  # set only for policies with `privileged = True`
    # what this call asked for (a real program's `max_tokens` / `stop`): a cap below the policy's own
    # budget, which token policies honour; stop strings, which the gateway cuts the reply at
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    # a real program's pending call as it sent it (tools, stop...): what forward mode sends upstream unchanged
    request: dict[str, Any] | None = None


@dataclass(slots=True)
class Privileged:
    """The oracle's channel: everything a scripted policy plans from that a learner must not see.

    task: the Task (its reference solution and hidden tests); session: the live harness
    session (env state such as the workspace); harness: renders intents in its own syntax;
    view: the session's structured state at this turn (a MiniWoB page), refreshed every turn.
    """

    task: TaskLike
    session: Any
    harness: Any
    view: dict[str, Any] = field(default_factory=dict)


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
    #: gets `AgentState.privileged` (task, session, harness): the scripted oracle family only
    privileged: bool = False

    @abstractmethod
    def act(self, states: list[AgentState]) -> list[Action]:
        """One action per state, in order."""

    def end_episode(self, state: AgentState) -> None:
        """Called once when an episode ends (free caches)."""
        state.cache.clear()

    def close(self) -> None:
        """Release resources (endpoint clients, model memory)."""
