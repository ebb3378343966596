#!/bin/bash
set -euo pipefail
cat > /app/dedupe <<'SCRIPT'
#!/bin/bash
# dedupe FILE...: drop repeated lines (compared case-insensitively) in place, first one kept
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: dedupe FILE..." >&2
  exit 2
fi
for f in "$@"; do
  tmp=$(mktemp)
  awk '!seen[tolower($0)]++' "$f" > "$tmp"
  cat "$tmp" > "$f"  # rewrite in place: the file keeps its inode and mode
  rm -f "$tmp"
done
SCRIPT
chmod +x /app/dedupe
/app/dedupe /app/emails.txt
