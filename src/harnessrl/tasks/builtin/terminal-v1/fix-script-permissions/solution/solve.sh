#!/bin/bash
set -euo pipefail
cat > /app/fix_perms <<'SCRIPT'
#!/bin/bash
# fix_perms DIR: *.sh files executable by everyone, *.key files owner-only (600)
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: fix_perms DIR" >&2
  exit 2
fi
set -e
find "$1" -type f -name '*.sh' -exec chmod a+x -- {} +
find "$1" -type f -name '*.key' -exec chmod 600 -- {} +
SCRIPT
chmod +x /app/fix_perms
/app/fix_perms /app
