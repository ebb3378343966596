#!/bin/bash
set -euo pipefail
cat > /app/fix_jpeg_ext <<'SCRIPT'
#!/bin/bash
# fix_jpeg_ext DIR: rename *.jpeg / *.JPEG files under DIR to *.jpg, never overwriting
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: fix_jpeg_ext DIR" >&2
  exit 2
fi
status=0
while IFS= read -r -d '' f; do
  dest="${f%.*}.jpg"
  if [ -e "$dest" ] || [ -L "$dest" ]; then
    echo "fix_jpeg_ext: not renaming $f: $dest already exists" >&2
    status=1
    continue
  fi
  mv -- "$f" "$dest"
done < <(find "$1" -type f \( -name '*.jpeg' -o -name '*.JPEG' \) -print0)
exit $status
SCRIPT
chmod +x /app/fix_jpeg_ext
/app/fix_jpeg_ext /app/photos
