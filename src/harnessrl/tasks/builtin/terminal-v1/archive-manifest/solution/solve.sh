#!/bin/bash
set -euo pipefail
mkdir -p /app/out
tar -xzf /app/bundle.tar.gz -C /app/out
cd /app/out
find . -type f ! -name MANIFEST.sha256 -printf '%P\n' | LC_ALL=C sort | xargs -d '\n' sha256sum > MANIFEST.sha256
