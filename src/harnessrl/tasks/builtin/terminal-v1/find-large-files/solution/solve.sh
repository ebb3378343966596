#!/bin/bash
set -euo pipefail
cd /app/data
find . -type f -size +1048576c -printf '%P\n' | LC_ALL=C sort > /app/large.txt
