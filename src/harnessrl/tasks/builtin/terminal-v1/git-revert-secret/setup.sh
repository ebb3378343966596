#!/bin/bash
set -euo pipefail
cd /app
git init -q -b main
git config user.name "Dev"
git config user.email "dev@example.com"
echo "app" > app.txt && git add . && git commit -q -m "Initial"
echo "v2" >> app.txt && git commit -q -am "Second"
echo "API_KEY=sk-123" > secrets.env && git add . && git commit -q -m "Add env"
