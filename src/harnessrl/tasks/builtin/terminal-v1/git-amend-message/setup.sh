#!/bin/bash
set -euo pipefail
cd /app
git init -q -b main
git config user.name "Dev"
git config user.email "dev@example.com"
echo "print('v1')" > app.py
git add app.py && GIT_AUTHOR_DATE="2024-01-01T10:00:00" GIT_COMMITTER_DATE="2024-01-01T10:00:00" git commit -q -m "Initial commit"
echo "def parse(s): return s.split()" > parser.py
git add parser.py && GIT_AUTHOR_DATE="2024-01-02T10:00:00" GIT_COMMITTER_DATE="2024-01-02T10:00:00" git commit -q -m "Add parsr module"
