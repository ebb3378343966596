#!/bin/bash
total=0
for f in $(find "$1" -name '*.txt' | sort); do
  n=$(wc -l < $f)
  echo "$n $f"
  total=$((total + n))
done
echo "total $total"
