"""tiny-agent: one model call through the gateway (urllib, standard library only), then the reply's
tool calls applied to /app, an account of what it did in /agent/done.json, exit 0."""

import json
import os
import urllib.request

TOOLS = [{"type": "function", "function": {"name": "write_file", "description": "Write a whole file.", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"]}}},
         {"type": "function", "function": {"name": "replace_text", "description": "Replace text in a file once.",
                                           "parameters": {"type": "object", "properties": {
                                               "path": {"type": "string"}, "old": {"type": "string"},
                                               "new": {"type": "string"}}, "required": ["path", "old", "new"]}}}]


def main() -> int:
    task = open(os.environ["TASK_FILE"]).read()
    body = {"model": os.environ["OPENAI_MODEL"], "tools": TOOLS, "messages": [
        {"role": "system", "content": "You fix code in /app with one reply of tool calls."},
        {"role": "user", "content": task}]}
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", json.dumps(body).encode(), {
        "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        message = json.loads(resp.read())["choices"][0]["message"]
    done = []
    for call in message.get("tool_calls") or []:
        args = json.loads(call["function"]["arguments"])
        path = args["path"] if args["path"].startswith("/") else os.path.join("/app", args["path"])
        if call["function"]["name"] == "write_file":
            os.makedirs(os.path.dirname(path), exist_ok=True)
            text = args["content"]
        else:
            text = open(path).read().replace(args["old"], args["new"], 1)
        with open(path, "w") as f:
            f.write(text)
        done.append([call["function"]["name"], path])
    with open("/agent/done.json", "w") as f:
        json.dump(done, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
