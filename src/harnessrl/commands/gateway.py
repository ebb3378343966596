"""`harnessrl gateway serve`: one gateway on the host's loopback, answered by a policy (debugging).

    harnessrl gateway serve --policy lm:smollm2-135m --port 8000 --api-key-env HARNESSRL_GATEWAY_KEY
    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=$HARNESSRL_GATEWAY_KEY some-agent ...
    harnessrl gateway serve --forward http://127.0.0.1:8001/v1 --port 8000    # forward mode (a vLLM server)

A request that asks for `logprobs` / `return_token_ids` (vLLM's fields) gets the policy's sampled
ids, log-probs and prompt ids, so this gateway can itself be the upstream of forward mode.

Each call is answered on its own (no lockstep group) with the conversation rendered as a
program harness renders it (tools Hermes-style). Episodes run their programs through a gateway
of their own inside their network namespace (harness/program.py); this command is for poking
at a policy with a program or the `openai` client by hand. It binds 127.0.0.1 only.
"""

from __future__ import annotations

import os

import typer

from harnessrl.commands.common import console, fail, user_errors

app = typer.Typer(help="The OpenAI-compatible model gateway (debugging: serve a policy on loopback).", no_args_is_help=True)


@app.command("serve")
def serve(policy: str = typer.Option("", "--policy", "-p", help="A policy spec: lm:NAME, endpoint:MODEL, replay:FILE, ..."),
          forward: str = typer.Option("", "--forward", help="Forward mode: send each call as it came to this "
                                      "OpenAI-compatible URL (same as --policy forward:URL)."),
          port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port on 127.0.0.1 (0: any free one)."),
          api_key_env: str = typer.Option("HARNESSRL_GATEWAY_KEY", "--api-key-env",
                                          help="Environment variable holding the one api key accepted."),
          model_name: str = typer.Option("harnessrl-policy", "--model-name", help="The model id /v1/models lists."),
          max_calls: int = typer.Option(1000, "--max-calls", min=1, help="Calls served before every later one is refused.")) -> None:
    """Serve `policy` at http://127.0.0.1:PORT/v1 until Ctrl-C."""
    import socket

    from harnessrl.gateway import Gateway
    from harnessrl.policies.registry import make_policy
    from harnessrl.policies.upstream_tokens import answer_call

    policy = _policy_spec(policy, forward)
    key = os.environ.get(api_key_env, "")
    if not key:
        raise fail(f"--api-key-env {api_key_env}: the variable is empty; export {api_key_env}=<a secret> first")
    from harnessrl.policies.endpoint import EndpointError

    with user_errors():
        try:
            pol = make_policy(policy)
        except EndpointError as err:  # forward mode: the upstream is not there, or refuses us
            raise fail(f"--{'forward' if forward else 'policy'}: {err}") from None
        try:
            sock = socket.create_server(("127.0.0.1", port))
        except OSError as err:
            raise fail(f"--port {port}: cannot listen on 127.0.0.1:{port} ({err.strerror}); pick another port or 0")
        gw = Gateway(api_key=key, model=model_name, sock=sock, max_calls=max_calls).start()
    console.print(f"serving {pol.policy_id} at {gw.base_url} (model {model_name!r}); Ctrl-C stops")
    issued: dict[str, str] = {}
    try:
        n = 0
        while True:
            call = gw.next_call(timeout=0.5)
            if call is None:
                continue
            answer_call(gw, call, pol, issued, n)  # token ids and log-probs too when the request asks
            n += 1
    except KeyboardInterrupt:
        pass
    finally:
        gw.close("the server was stopped")
        pol.close()


def _policy_spec(policy: str, forward: str) -> str:
    if bool(policy) == bool(forward):
        raise fail("--policy/--forward: give exactly one (a policy spec, or the upstream URL for forward mode)")
    if forward and not forward.startswith(("http://", "https://")):
        raise fail(f"--forward {forward!r}: give the upstream's URL, e.g. http://127.0.0.1:8001/v1")
    return policy or f"forward:{forward}"
