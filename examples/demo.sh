#!/usr/bin/env bash
# The demo (`make demo` runs it): start the example shop API, check its connector,
# sync it into Parquet on local Spark, let the API get new data, sync again
# (incrementally), show that only the new records were read, stop the API.
#
# Environment: DEMO_OUTPUT (default output/demo) is where the files go, cleaned
# first; SHOP_PORT (default 8765) is the API's port.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v run-manifest >/dev/null 2>&1; then
  echo "demo: run-manifest is not on PATH; run \`make demo\` (it sets up .venv), or activate .venv first" >&2
  exit 2
fi
PY="$(dirname "$(command -v run-manifest)")/python"
[ -x "$PY" ] || PY=python3

MANIFEST=examples/shop/manifest.yaml
CONFIG=examples/shop/config.json
OUT=${DEMO_OUTPUT:-output/demo}
PORT=${SHOP_PORT:-8765}
URL="http://127.0.0.1:$PORT"
export SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-127.0.0.1}  # no "hostname resolves to a loopback address" warning

WORK=$(mktemp -d)
API_PID=""
stop_api() {
  if [ -n "$API_PID" ] && kill -0 "$API_PID" 2>/dev/null; then
    kill "$API_PID" 2>/dev/null || true
    wait "$API_PID" 2>/dev/null || true
    echo
    echo "== the shop API is stopped"
    tail -n 1 "$WORK/api.out"
  fi
  rm -rf "$WORK"
}
trap stop_api EXIT
trap 'exit 130' INT TERM

started=$SECONDS
step() { echo; echo "== $*"; }

step "1. start the example shop API (examples/shop/api.py) on $URL"
"$PY" examples/shop/api.py --port "$PORT" >"$WORK/api.out" 2>&1 &
API_PID=$!
for _ in $(seq 100); do
  grep -q "^listening on" "$WORK/api.out" && break
  if ! kill -0 "$API_PID" 2>/dev/null; then
    cat "$WORK/api.out" >&2
    echo "demo: the shop API did not start; SHOP_PORT=<port> runs it on another port" >&2
    API_PID=""
    exit 1
  fi
  sleep 0.1
done
grep -q "^listening on" "$WORK/api.out" || { echo "demo: the shop API did not start within 10 s" >&2; exit 1; }
cat "$WORK/api.out"
if [ "$PORT" != 8765 ]; then  # the shipped config points at 8765
  "$PY" -c "import json,sys; c=json.load(open(sys.argv[1])); c['base_url']=sys.argv[2]; json.dump(c, open(sys.argv[3], 'w'))" \
    "$CONFIG" "$URL" "$WORK/config.json"
  CONFIG="$WORK/config.json"
fi

step "2. validate-manifest --config $CONFIG $MANIFEST"
validate-manifest --config "$CONFIG" "$MANIFEST"

rm -rf "$OUT"
step "3. the first sync: run-manifest $MANIFEST --config $CONFIG --output $OUT"
run-manifest "$MANIFEST" --config "$CONFIG" --output "$OUT"

step "4. the files"
"$PY" examples/shop/demo_steps.py files "$OUT"
READ="import pyarrow.parquet as pq; t = pq.read_table('$OUT/orders'); print(t.num_rows, 'orders;', t.column_names)"
echo "Read a stream's folder with pyarrow (or spark.read.parquet('$OUT/orders')); hidden and _ files are skipped:"
echo "  ${PY#"$PWD"/} -c \"$READ\""
"$PY" -c "$READ"

step "5. the API gets new data: POST $URL/_admin/advance"
"$PY" examples/shop/demo_steps.py advance "$URL" --save "$WORK/advance.json"

step "6. the second sync, incremental: the same command"
run-manifest "$MANIFEST" --config "$CONFIG" --output "$OUT"

step "7. what each sync read (rows per _airbyte_meta.sync_id in the files)"
"$PY" examples/shop/demo_steps.py compare "$OUT" --expected "$WORK/advance.json"
"$PY" examples/shop/demo_steps.py stats "$URL"

echo
echo "Done in $((SECONDS - started)) s. Files and state stay in $OUT; run the same command again to sync what changed."
