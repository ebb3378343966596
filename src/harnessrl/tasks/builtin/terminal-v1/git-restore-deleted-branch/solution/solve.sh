#!/bin/bash
set -euo pipefail
cd /app
sha=$(git rev-parse "HEAD@{$(git reflog --format='%gs' | grep -n 'moving from feature/login to main' | head -1 | cut -d: -f1)}")
git branch feature/login "$sha"
