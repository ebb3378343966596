#!/bin/bash
set -euo pipefail
mkdir -p /app/data/a/b /app/data/c
head -c 2000000 /dev/zero > /app/data/a/big.bin
head -c 1048576 /dev/zero > /app/data/exact.bin
head -c 1048577 /dev/zero > /app/data/c/just-over.bin
head -c 5000000 /dev/zero > "/app/data/a/b/huge video.mp4"
head -c 10 /dev/zero > /app/data/small.txt
ln -s a/big.bin /app/data/link-to-big
