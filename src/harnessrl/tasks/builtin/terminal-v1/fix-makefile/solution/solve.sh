#!/bin/bash
set -euo pipefail
cd /app
sed -i 's|^bin/calc: src/main.o$|bin/calc: src/main.o src/ops.o|' Makefile
make -s clean
