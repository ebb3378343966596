#!/bin/bash
set -euo pipefail
cat > /app/wordfreq <<'SCRIPT'
#!/bin/bash
if [ $# -lt 2 ] || ! [[ "$1" =~ ^[0-9]+$ ]]; then
  echo "usage: wordfreq N FILE..." >&2
  exit 2
fi
n=$1; shift
cat "$@" | tr -cs 'A-Za-z' '\n' | tr 'A-Z' 'a-z' | grep -v '^$' | sort | uniq -c \
  | awk '{print $1, $2}' | sort -k1,1nr -k2,2 | head -n "$n"
SCRIPT
chmod +x /app/wordfreq
