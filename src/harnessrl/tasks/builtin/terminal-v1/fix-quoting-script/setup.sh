#!/bin/bash
set -euo pipefail
mkdir -p "/app/docs/sub dir"
printf 'a\nb\n' > /app/docs/plain.txt
printf 'x\ny\nz\n' > "/app/docs/sub dir/with space.txt"
printf 'q\n' > "/app/docs/sub dir/ok.txt"
printf 'ignored\n' > /app/docs/notes.md
