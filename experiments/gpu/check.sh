#!/usr/bin/env bash
# The one prepared script for a lent GPU machine (docs/gpu.md).
#
#   bash experiments/gpu/check.sh [--receive] [OUT]   # on the GPU machine, after pack.py's chunks
#   bash experiments/gpu/check.sh --dry-run OUT       # the same steps on the CPU, tiny model (make test runs it)
#
# --receive only takes a chunk in (the calls before the last); the last call unpacks the
# payload, puts it on the paths and runs check.py, whose figures land in OUT ($OUT there).
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
MODE=""
case "${1:-}" in --dry-run|--receive) MODE=$1; shift ;; esac
DEST=${1:-${OUT:-outputs/gpu-check}}

if [ "$MODE" = "--dry-run" ]; then
    exec "$PY" experiments/gpu/check.py --dry-run --out "$DEST"
fi
if [ -f .gpu/manifest.json ]; then
    "$PY" experiments/gpu/pack.py --unpack
    status=$?
    if [ "$MODE" = "--receive" ]; then exit 0; fi
    if [ $status -ne 0 ]; then echo "not every chunk is here: carry the missing ones first" >&2; exit $status; fi
    export PYTHONPATH="$PWD/.gpu/payload/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
    export KGREASON_CACHE="$PWD/.gpu/payload/cache"
else
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
exec "$PY" experiments/gpu/check.py --out "$DEST"
