#!/bin/bash
set -euo pipefail
find /app/scripts -type f -name '*.sh' -exec chmod a+x {} +
chmod 600 /app/secret.key
