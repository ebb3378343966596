#!/bin/bash
set -euo pipefail
cat > /app/error_counts <<'SCRIPT'
#!/bin/bash
# error_counts LOG...: ERROR events per component (field 3 is the level, field 4 the component)
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: error_counts LOG..." >&2
  exit 2
fi
awk '$3 == "ERROR" {print $4}' "$@" | LC_ALL=C sort | uniq -c | LC_ALL=C sort -k1,1nr -k2,2 | awk '{print $2, $1}'
SCRIPT
chmod +x /app/error_counts
/app/error_counts /app/logs/app.log > /app/error_counts.txt
