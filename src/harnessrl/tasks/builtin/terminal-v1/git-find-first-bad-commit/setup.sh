#!/bin/bash
set -euo pipefail
cd /app
git init -q -b main
git config user.name "Dev"
git config user.email "dev@example.com"
cat > check.sh <<'SH'
#!/bin/sh
test "$(cat value.txt)" -lt 50
SH
chmod +x check.sh
for i in $(seq 1 16); do
  v=$((i * 3)); [ $i -ge 11 ] && v=$((i * 7))
  echo $v > value.txt
  echo "step $i" >> history.txt
  git add . && git commit -q -m "Step $i"
done
echo "first_bad.txt" > .git/info/exclude
