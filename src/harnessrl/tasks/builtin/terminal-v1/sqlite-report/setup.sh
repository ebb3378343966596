#!/bin/bash
set -euo pipefail
python - <<'PY'
import sqlite3
db = sqlite3.connect("/app/shop.db")
db.executescript('''
CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER, total REAL);
INSERT INTO customers VALUES (1,'Ann'),(2,'Bob'),(3,'Cy'),(4,'Dee'),(5,'Eve');
INSERT INTO orders(customer_id,total) VALUES (1,10.5),(2,99.0),(1,40.25),(3,5.0),(4,60.0),(4,0.75),(5,20.0),(2,1.0);
''')
db.commit()
PY
