#!/bin/bash
set -euo pipefail
cat > /app/top_customers <<'SCRIPT'
#!/usr/bin/env python3
"""top_customers DB N: the N customers with the highest summed order totals."""
import os
import sqlite3
import sys
import urllib.parse

if len(sys.argv) != 3 or not sys.argv[2].isdigit() or not os.path.isfile(sys.argv[1]):
    print("usage: top_customers DB N  (DB an existing SQLite file, N a non-negative integer)", file=sys.stderr)
    sys.exit(2)
# read-only, so a typo'd path can never create an empty database
db = sqlite3.connect(f"file:{urllib.parse.quote(os.path.abspath(sys.argv[1]))}?mode=ro", uri=True)
rows = db.execute(
    "SELECT c.name, SUM(o.total) AS t FROM customers c JOIN orders o ON o.customer_id = c.id"
    " GROUP BY c.id ORDER BY t DESC, c.name LIMIT ?", (int(sys.argv[2]),))
for name, total in rows:
    print(f"{name}\t{total:.2f}")
SCRIPT
chmod +x /app/top_customers
/app/top_customers /app/shop.db 3 > /app/top_customers.txt
