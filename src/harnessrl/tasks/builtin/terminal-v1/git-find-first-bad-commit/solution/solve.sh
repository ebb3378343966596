#!/bin/bash
set -euo pipefail
cd /app
good=$(git rev-list --max-parents=0 HEAD)
git bisect start HEAD "$good" >/dev/null
git bisect run ./check.sh > /tmp/bisect.log 2>&1 || true
grep -o '^[0-9a-f]\{40\} is the first bad commit' /tmp/bisect.log | cut -d' ' -f1 > first_bad.txt
git bisect reset main >/dev/null 2>&1
