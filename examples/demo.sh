#!/usr/bin/env bash
# The demo: validate the example connector, then try to run it.
# Running lands with the interpreter and the Spark sink; until then this says so.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== validate-manifest examples/shop/manifest.yaml"
validate-manifest --config examples/shop/config.json examples/shop/manifest.yaml

echo
echo "== run-manifest examples/shop/manifest.yaml --config examples/shop/config.json"
set +e
run-manifest examples/shop/manifest.yaml --config examples/shop/config.json
status=$?
set -e
if [ "$status" -eq 3 ]; then
  echo
  echo "The demo sync is not available yet: only validation works in this version."
  exit 0
fi
exit "$status"
