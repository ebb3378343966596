#!/bin/bash
set -euo pipefail
cd /app
printf '[server]\nport = 8080\ntimeout = 30\n\n[log]\nlevel = info\n' > config.ini
git add config.ini
git commit -q --no-edit
