#!/bin/bash
set -euo pipefail
cd /app
git init -q -b main
git config user.name "Dev"
git config user.email "dev@example.com"
echo "base" > README.md && git add . && git commit -q -m "Initial commit"
git checkout -q -b feature/login
echo "def login(): pass" > login.py && git add . && git commit -q -m "Add login stub"
echo "def login(user): return user" > login.py && git commit -q -am "Login takes a user"
git checkout -q main
echo "more" >> README.md && git commit -q -am "Update README"
git branch -q -D feature/login
