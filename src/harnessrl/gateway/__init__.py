"""An OpenAI-compatible model gateway for one episode's agent program (server.py)."""

from harnessrl.gateway.server import Call, Gateway, Refusal, Reply

__all__ = ["Call", "Gateway", "Refusal", "Reply"]
