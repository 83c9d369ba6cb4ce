#!/usr/bin/env bash
# Make .venv-peers: a venv with the peer tools the benchmarks and parity tests
# compare against (airbyte-cdk, and dlt with its Parquet extra), kept apart
# from the project's own .venv so their dependencies never mix with ours: the
# project never imports them, the benchmarks run them as subprocesses.
#
#   bash bench/peers.sh                 # makes <repo>/.venv-peers once
#   PEERS_VENV=/tmp/peers bash bench/peers.sh   # somewhere else
#   PYTHON=python3.12 bash bench/peers.sh       # with another interpreter
#
# Idempotent: a stamp file in the venv records what was installed; running it
# again does nothing unless the package list changed or the venv is broken.
# Then:
#   python bench/extraction.py --peers      # airbyte-cdk's source-declarative-manifest
#   python bench/pipeline.py --peers        # dlt's rest_api source into Parquet
#   AIRBYTE_CDK_PYTHON=.venv-peers/bin/python pytest tests/parity
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${PEERS_VENV:-$REPO/.venv-peers}"
PYTHON="${PYTHON:-python3}"
STAMP="$VENV/.peers-installed"
PACKAGES=("airbyte-cdk" "dlt[parquet]")
WANTED="$(printf '%s\n' "${PACKAGES[@]}")"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANTED" ] \
    && "$VENV/bin/python" -c "import airbyte_cdk, dlt" 2>/dev/null; then
    echo "peers: $VENV is ready (remove $STAMP to reinstall)"
    exit 0
fi

if ! "$PYTHON" -c 'import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] < (3, 14) else 1)'; then
    echo "peers: airbyte-cdk needs Python 3.10 to 3.13; $PYTHON is $("$PYTHON" -V 2>&1)." \
         "Set PYTHON to such an interpreter, e.g. PYTHON=python3.12 bash bench/peers.sh" >&2
    exit 2
fi

echo "peers: making $VENV with ${PACKAGES[*]} (this takes a few minutes the first time)"
rm -f "$STAMP"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "${PACKAGES[@]}"
"$VENV/bin/python" -c "import airbyte_cdk, dlt"  # fail here, not in the benchmark, if an import breaks
printf '%s\n' "$WANTED" > "$STAMP"
"$VENV/bin/python" -m pip list 2>/dev/null | grep -iE '^(airbyte-cdk|dlt) ' | sed 's/^/peers: installed /'
echo "peers: ready: AIRBYTE_CDK_PYTHON=$VENV/bin/python (and DLT_PYTHON, the same)"
