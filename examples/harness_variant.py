"""A harness variant: the same lookup tasks, a reworded prompt and observation, evaluated next to the original."""

import sys

import harnessrl

store = sys.argv[1] if len(sys.argv) > 1 else "runs/quickstart/store"
plain = harnessrl.load_spec("lookup-plain")
terse = plain.model_copy(update={
    "id": "lookup-terse",
    "system_prompt": "Find the answer. Use $look <object>, then $answer <words>.",
    "options": {**plain.options, "observation": "$object: $pairs"},
})

result = harnessrl.evaluate("oracle", "lookup", [plain, terse], tasks=["0", "1", "2"], store=store)
for row in result.summary:
    print(f"{row['harness_id']:14s} pass@1 {row['pass@1']:.2f}, {row['mean_turns']:.1f} turns")
for ep in result.episodes[:: len(result.episodes) // 2]:  # one episode of each harness: what the agent saw
    print(f"--- {ep.context.harness_id}:", " | ".join(m["content"].replace("\n", " ") for m in ep.messages[:4]))
