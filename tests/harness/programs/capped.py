"""A program that asks for a token cap, then for stop strings, then sends the history back.

Standard library only; run inside the episode sandbox like any program. It prints one JSON line
with what each call returned (content, finish_reason, usage) and exits 0.
"""

import json
import os
import sys
import urllib.request


def complete(messages, **extra):
    body = json.dumps({"model": os.environ["OPENAI_MODEL"], "messages": messages, **extra}).encode()
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body, {
        "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        choice = json.loads(resp.read())["choices"][0]
    return choice["message"]["content"] or "", choice["finish_reason"]


def main():
    messages = [{"role": "system", "content": "You are an agent. Reply with one command per turn."},
                {"role": "user", "content": "What color is the lamp?"}]
    seen = []
    for extra in ({"max_tokens": 5}, {"stop": [" ", "e", "o", "a"]}, {}):
        content, finish = complete(messages, **extra)
        seen.append({"content": content, "finish_reason": finish})
        messages += [{"role": "assistant", "content": content}, {"role": "user", "content": "look box"}]
    print(json.dumps(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
