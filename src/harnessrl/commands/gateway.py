"""`harnessrl gateway serve`: one gateway on the host's loopback, answered by a policy (debugging).

    harnessrl gateway serve --policy lm:smollm2-135m --port 8000 --api-key-env HARNESSRL_GATEWAY_KEY
    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=$HARNESSRL_GATEWAY_KEY some-agent ...

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
def serve(policy: str = typer.Option(..., "--policy", "-p", help="A policy spec: lm:NAME, endpoint:MODEL, replay:FILE, ..."),
          port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port on 127.0.0.1 (0: any free one)."),
          api_key_env: str = typer.Option("HARNESSRL_GATEWAY_KEY", "--api-key-env",
                                          help="Environment variable holding the one api key accepted."),
          model_name: str = typer.Option("harnessrl-policy", "--model-name", help="The model id /v1/models lists."),
          max_calls: int = typer.Option(1000, "--max-calls", min=1, help="Calls served before every later one is refused.")) -> None:
    """Serve `policy` at http://127.0.0.1:PORT/v1 until Ctrl-C."""
    import socket

    from harnessrl.gateway import Gateway
    from harnessrl.gateway.openai_wire import call_limits, cut_at_stop
    from harnessrl.harness._program_wire import to_reply, to_text
    from harnessrl.policies.base import AgentState
    from harnessrl.policies.registry import make_policy

    key = os.environ.get(api_key_env, "")
    if not key:
        raise fail(f"--api-key-env {api_key_env}: the variable is empty; export {api_key_env}=<a secret> first")
    with user_errors():
        pol = make_policy(policy)
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
            cap, stop = call_limits(call.request)  # honoured as in an episode (harness/program.py)
            state = AgentState(messages=to_text(call.request, issued), harness_id="gateway", task_id="serve",
                               turn=n, episode_key=f"call-{n}", max_tokens=cap, stop=stop)
            action = pol.act([state])[0]
            pol.end_episode(state)
            text, stopped = cut_at_stop(action.text, stop)
            reply, _ = to_reply(text, call.request, issued)
            if not reply.tool_calls:
                reply.finish_reason = "length" if action.truncated and not stopped else "stop"
            reply.prompt_tokens, reply.completion_tokens = int(action.prompt_tokens), int(action.loss_mask.sum())
            gw.answer(call, reply)
            n += 1
    except KeyboardInterrupt:
        pass
    finally:
        gw.close("the server was stopped")
        pol.close()
