#!/bin/bash
set -euo pipefail
cat > /app/json2csv <<'SCRIPT'
#!/usr/bin/env python3
"""json2csv FILE: the active users of a JSON array as CSV (id,name,email), sorted by id."""
import csv
import json
import sys

if len(sys.argv) != 2:
    print("usage: json2csv FILE", file=sys.stderr)
    sys.exit(2)
with open(sys.argv[1], encoding="utf-8") as f:
    users = json.load(f)
out = csv.writer(sys.stdout, lineterminator="\n")  # minimal quoting: commas and quotes, "" inside
out.writerow(["id", "name", "email"])
for user in sorted((u for u in users if u.get("active") is True), key=lambda u: int(u["id"])):
    out.writerow([user["id"], user["name"], user["email"]])
SCRIPT
chmod +x /app/json2csv
/app/json2csv /app/users.json > /app/users.csv
