#!/bin/bash
set -euo pipefail
find /app/etc -type f -name '*.conf' -exec sed -i 's#http://old\.example\.com#https://new.example.com#g' {} +
