#!/bin/bash
set -euo pipefail
cd /app
jq -r '["id","name","email"], (map(select(.active)) | sort_by(.id)[] | [.id, .name, .email]) | @csv' users.json \
  | sed 's/"\([^",]*\)"/\1/g' > users.csv
