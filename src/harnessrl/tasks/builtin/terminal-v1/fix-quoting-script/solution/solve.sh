#!/bin/bash
set -euo pipefail
cat > /app/count_lines.sh <<'SCRIPT'
#!/bin/bash
total=0
while IFS= read -r -d '' f; do
  n=$(wc -l < "$f")
  echo "$n $f"
  total=$((total + n))
done < <(find "$1" -name '*.txt' -print0 | sort -z)
echo "total $total"
SCRIPT
chmod +x /app/count_lines.sh
