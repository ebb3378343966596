#!/bin/bash
set -euo pipefail
cd /app
awk '$3 == "ERROR" {print $4}' logs/app.log | sort | uniq -c | sort -k1,1nr -k2,2 | awk '{print $2, $1}' > error_counts.txt
