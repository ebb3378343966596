#!/bin/bash
set -euo pipefail
cd /app
git commit -q --amend -m "Add parser module"
