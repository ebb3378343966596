#!/bin/bash
set -euo pipefail
mkdir -p /app/photos/2023/summer /app/photos/2024
for f in 2023/beach.jpeg 2023/summer/sea.JPEG 2024/cat.jpeg "2024/my dog.jpeg" 2024/notes.txt 2023/keep.jpg 2024/raw.png; do
  echo "data $f" > "/app/photos/$f"
done
