#!/bin/bash
set -euo pipefail
cd /app
{ echo "category,total"; tail -n +2 sales.csv | awk -F, '{s[$3]+=$4} END {for (c in s) printf "%s,%.2f\n", c, s[c]}' | sort; } > summary.csv
