#!/bin/bash
set -euo pipefail
cd /app
sqlite3 -separator $'\t' shop.db "SELECT c.name, printf('%.2f', SUM(o.total)) AS t FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.id ORDER BY SUM(o.total) DESC LIMIT 3;" > top_customers.txt
