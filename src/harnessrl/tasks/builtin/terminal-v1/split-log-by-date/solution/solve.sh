#!/bin/bash
set -euo pipefail
mkdir -p /app/by-day
awk '{ if (match($0, /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T/)) f = substr($0, 1, 10) ".log"; else f = "unknown.log"; print > ("/app/by-day/" f) }' /app/access.log
