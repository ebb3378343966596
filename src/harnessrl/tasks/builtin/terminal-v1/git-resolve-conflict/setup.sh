#!/bin/bash
set -euo pipefail
cd /app
git init -q -b main
git config user.name "Dev"
git config user.email "dev@example.com"
printf '[server]\nport = 80\n\n[log]\nlevel = info\n' > config.ini
echo "notes" > NOTES.md
git add . && git commit -q -m "Initial config"
git checkout -q -b feature
printf '[server]\nport = 80\ntimeout = 30\n\n[log]\nlevel = info\n' > config.ini
git commit -q -am "Add timeout"
git checkout -q main
printf '[server]\nport = 8080\n\n[log]\nlevel = info\n' > config.ini
git commit -q -am "Use port 8080"
git merge feature >/dev/null 2>&1 || true
