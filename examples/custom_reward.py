"""A custom reward: TRL's reward_funcs shape, added to the verifier's reward after grading."""

import sys

import harnessrl


def brevity(prompts, completions, **kwargs):
    """Minus the characters of the agent's replies, per 100 (prompts/completions: chat messages)."""
    return [-sum(len(m["content"]) for m in c if m["role"] == "assistant") / 100 for c in completions]


if __name__ == "__main__":
    store = sys.argv[1] if len(sys.argv) > 1 else "runs/quickstart/store"
    hook = harnessrl.RewardHook(funcs=("__main__:brevity",), weights=(0.5,))  # or mypkg.rewards:brevity
    result = harnessrl.evaluate("oracle", "lookup", ["lookup-plain", "lookup-kv"], tasks=["0", "1"], store=store,
                                rewards=hook)
    for ep in result.episodes:
        parts = ep.metadata["rewards"]
        print(f"{ep.context.harness_id:12s} verifier {parts['verifier']:.2f} + 0.5 x brevity "
              f"{parts['__main__:brevity']:+.2f} = {ep.reward:+.3f}")
