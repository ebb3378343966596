#!/bin/bash
set -euo pipefail
mkdir -p /tmp/src/docs /tmp/src/bin
echo "hello" > /tmp/src/docs/readme.md
echo "world" > /tmp/src/docs/guide.md
printf '#!/bin/sh\necho run\n' > /tmp/src/bin/run.sh
tar -czf /app/bundle.tar.gz -C /tmp/src docs bin
