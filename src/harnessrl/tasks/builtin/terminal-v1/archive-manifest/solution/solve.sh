#!/bin/bash
set -euo pipefail
cat > /app/extract_manifest <<'SCRIPT'
#!/bin/bash
# extract_manifest ARCHIVE OUTDIR: unpack a .tar.gz and write OUTDIR/MANIFEST.sha256
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: extract_manifest ARCHIVE OUTDIR" >&2
  exit 2
fi
archive=$1 out=$2
mkdir -p "$out"
if ! tar -xzf "$archive" -C "$out"; then
  echo "extract_manifest: cannot extract $archive" >&2
  exit 1
fi
cd "$out"
# the redirect may create the manifest before find looks: it is excluded by name
find . -type f ! -path ./MANIFEST.sha256 -printf '%P\0' | LC_ALL=C sort -z \
  | xargs -0 -r sha256sum -- > MANIFEST.sha256
SCRIPT
chmod +x /app/extract_manifest
/app/extract_manifest /app/bundle.tar.gz /app/out
