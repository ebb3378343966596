"""A small agent program that speaks mini-swe-agent's text protocol, standard library only.

It runs inside the episode sandbox like the real program (python3 /agent/program.py) and talks
HTTP to OPENAI_BASE_URL: one fenced `mswea_bash_command` block per reply, run in a subshell in
/app, answered with <returncode>/<output>; three format errors in a row or a submit end it; a
refused call (an HTTP error) ends it with exit code 1, as mini does. Tests use it where the real
program's start-up time would dominate.
"""

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request

BLOCK = re.compile(r"```mswea_bash_command\s*\n(.*?)\n```", re.DOTALL)


def complete(messages):
    body = json.dumps({"model": os.environ["OPENAI_MODEL"], "messages": messages}).encode()
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body, {
        "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        return json.loads(resp.read())["choices"][0]["message"]["content"] or ""


def main():
    messages = [{"role": "system", "content": "Reply with THOUGHT and exactly one ```mswea_bash_command block."},
                {"role": "user", "content": "Please solve this issue: " + os.environ["TASK"]}]
    errors = 0
    while True:
        try:
            text = complete(messages)
        except urllib.error.HTTPError as err:
            print("model call refused:", err.code, err.read().decode()[:300])
            return 1
        messages.append({"role": "assistant", "content": text})
        blocks = BLOCK.findall(text)
        if len(blocks) != 1:
            errors += 1
            if errors >= 3:
                print("RepeatedFormatError")
                return 0
            messages.append({"role": "user", "content": "Format error: reply with exactly one bash block."})
            continue
        errors = 0
        out = subprocess.run(["bash", "-c", blocks[0]], cwd="/app", capture_output=True, text=True, timeout=60)
        output = out.stdout + out.stderr
        if output.lstrip().startswith("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"):
            print("Submitted")
            return 0
        messages.append({"role": "user", "content": f"<returncode>{out.returncode}</returncode>\n<output>\n{output}</output>"})


if __name__ == "__main__":
    sys.exit(main())
