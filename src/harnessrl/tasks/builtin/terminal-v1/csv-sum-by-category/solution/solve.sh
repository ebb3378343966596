#!/bin/bash
set -euo pipefail
cat > /app/sum_by_category <<'SCRIPT'
#!/bin/bash
# sum_by_category FILE: the total amount per category of a sales CSV (columns found by name)
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: sum_by_category FILE" >&2
  exit 2
fi
echo "category,total"
awk -F, '
  NR == 1 {
    for (i = 1; i <= NF; i++) col[$i] = i
    c = col["category"]; a = col["amount"]
    if (!c || !a) { print "sum_by_category: the header has no category or amount column" > "/dev/stderr"; bad = 1; exit 2 }
    next
  }
  NF == 0 { next }
  { sum[$c] += $a }
  END {
    if (bad) exit 2
    for (k in sum) printf "%s,%.2f\n", k, sum[k]
  }' "$1" | LC_ALL=C sort
SCRIPT
chmod +x /app/sum_by_category
/app/sum_by_category /app/sales.csv > /app/summary.csv
