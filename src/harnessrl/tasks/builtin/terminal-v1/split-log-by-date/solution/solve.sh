#!/bin/bash
set -euo pipefail
cat > /app/split_by_day <<'SCRIPT'
#!/bin/bash
# split_by_day LOG DIR: LOG's lines into DIR/<YYYY-MM-DD>.log by their leading timestamp
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: split_by_day LOG DIR" >&2
  exit 2
fi
mkdir -p "$2"
# `print > file` truncates a file the first time this run writes it, then appends: a rerun replaces
awk -v dir="$2" '{
  if ($0 ~ /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]/) f = substr($0, 1, 10) ".log"
  else f = "unknown.log"
  print > (dir "/" f)
}' "$1"
SCRIPT
chmod +x /app/split_by_day
/app/split_by_day /app/access.log /app/by-day
