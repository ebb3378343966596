#!/bin/bash
set -euo pipefail
mkdir -p /app/scripts/lib
for f in deploy.sh lib/common.sh run.sh; do printf '#!/bin/sh\necho %s\n' "$f" > /app/scripts/$f; chmod 644 /app/scripts/$f; done
printf 'data\n' > /app/scripts/notes.txt && chmod 640 /app/scripts/notes.txt
printf 'KEY\n' > /app/secret.key && chmod 666 /app/secret.key
