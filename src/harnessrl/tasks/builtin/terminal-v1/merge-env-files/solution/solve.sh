#!/bin/bash
set -euo pipefail
cat > /app/merge_env <<'SCRIPT'
#!/bin/bash
# merge_env FILE...: the KEY=value lines of .env files merged (the later line wins), sorted by key
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: merge_env FILE..." >&2
  exit 2
fi
awk '
  /^[[:space:]]*#/ || !/=/ { next }
  { i = index($0, "="); value[substr($0, 1, i - 1)] = substr($0, i + 1) }
  END { for (k in value) print k "=" value[k] }' "$@" | LC_ALL=C sort -t= -k1,1
SCRIPT
chmod +x /app/merge_env
/app/merge_env /app/.env.defaults /app/.env.local > /app/.env
