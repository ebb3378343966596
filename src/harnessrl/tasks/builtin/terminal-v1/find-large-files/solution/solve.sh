#!/bin/bash
set -euo pipefail
cat > /app/find_large <<'SCRIPT'
#!/bin/bash
# find_large DIR SIZE: regular files under DIR larger than SIZE bytes, relative paths, sorted
if [ $# -ne 2 ] || ! [[ "$2" =~ ^[0-9]+$ ]] || [ ! -d "$1" ]; then
  echo "usage: find_large DIR SIZE  (SIZE in bytes, a non-negative integer)" >&2
  exit 2
fi
find "$1" -type f -size +"$2"c -printf '%P\n' | LC_ALL=C sort
SCRIPT
chmod +x /app/find_large
/app/find_large /app/data 1048576 > /app/large.txt
