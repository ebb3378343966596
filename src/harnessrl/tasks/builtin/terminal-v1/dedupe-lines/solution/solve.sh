#!/bin/bash
set -euo pipefail
cd /app
awk '!seen[tolower($0)]++' emails.txt > emails.tmp && mv emails.tmp emails.txt
