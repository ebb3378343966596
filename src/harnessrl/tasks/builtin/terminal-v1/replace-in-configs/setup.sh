#!/bin/bash
set -euo pipefail
mkdir -p /app/etc/site/nested
printf 'url = http://old.example.com/api\nmirror = http://old.example.com\nother = http://old.example.org\n' > /app/etc/main.conf
printf 'upstream http://old.example.com:8080;\n' > /app/etc/site/nested/proxy.conf
printf 'url = http://old.example.com/api\n' > /app/etc/main.conf.bak
printf 'plain\n' > /app/etc/site/readme.txt
