#!/bin/bash
set -euo pipefail
cat > /app/backup.sh <<'SCRIPT'
#!/bin/bash
set -euo pipefail
src="${1:-}"
if [ ! -d "$src" ]; then
  echo "backup.sh: not a directory: $src" >&2
  exit 1
fi
src="$(cd "$src" && pwd)"
mkdir -p /app/backups
out="/app/backups/$(basename "$src")-$(date +%Y%m%d).tar.gz"
tar -czf "$out" -C "$(dirname "$src")" "$(basename "$src")"
echo "$out"
SCRIPT
chmod +x /app/backup.sh
