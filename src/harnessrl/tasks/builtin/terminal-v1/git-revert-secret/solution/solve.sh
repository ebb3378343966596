#!/bin/bash
set -euo pipefail
cd /app
git revert --no-edit HEAD >/dev/null
