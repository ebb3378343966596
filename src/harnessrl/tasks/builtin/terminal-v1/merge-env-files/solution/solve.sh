#!/bin/bash
set -euo pipefail
cd /app
cat .env.defaults .env.local | grep -v '^#' | grep '=' | awk -F= '{k=$1; sub(/^[^=]*=/, ""); v[k]=$0} END {for (k in v) print k "=" v[k]}' | sort > .env
