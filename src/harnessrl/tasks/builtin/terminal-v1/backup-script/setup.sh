#!/bin/bash
set -euo pipefail
mkdir -p /app/data/sub
echo alpha > /app/data/a.txt
echo beta > /app/data/sub/b.txt
