#!/bin/bash
set -euo pipefail
cat > /app/replace_in_configs <<'SCRIPT'
#!/usr/bin/env python3
"""replace_in_configs DIR OLD NEW: literal search and replace in every *.conf file under DIR."""
import os
import sys

if len(sys.argv) != 4 or not sys.argv[2] or not os.path.isdir(sys.argv[1]):
    print("usage: replace_in_configs DIR OLD NEW  (OLD non-empty, both literal text)", file=sys.stderr)
    sys.exit(2)
root, old, new = sys.argv[1], os.fsencode(sys.argv[2]), os.fsencode(sys.argv[3])
for here, _dirs, files in os.walk(root):
    for name in files:
        path = os.path.join(here, name)
        if not name.endswith(".conf") or os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            text = f.read()
        if old in text:
            with open(path, "wb") as f:  # rewrites in place: mode and owner stay
                f.write(text.replace(old, new))
SCRIPT
chmod +x /app/replace_in_configs
/app/replace_in_configs /app/etc http://old.example.com https://new.example.com
