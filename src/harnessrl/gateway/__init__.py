"""An OpenAI-compatible model gateway for one episode's agent program (server.py; its limits: limits.py)."""

from harnessrl.gateway.limits import Limits
from harnessrl.gateway.server import Call, Gateway, Refusal, Reply

__all__ = ["Call", "Gateway", "Limits", "Refusal", "Reply"]
