#!/usr/bin/env bash
# forge-tiny v2, GPU run (models/README.md): one invocation trains for MINUTES of step time and
# resumes from /tmp/forge-tiny-run (same machine, optimizer state kept) or from the bf16 weights
# split into .cache/tiny-gpu/weights.pt.part.* (a fresh machine: fresh optimizer).
# Usage: tools/tiny-model/gpu-run.sh MINUTES TOTAL_MINUTES   (writes logs and weights to $OUT)
set -euo pipefail
cd "$(dirname "$0")"
MINUTES=${1:-8}
TOTAL=${2:-23}
RUN=/tmp/forge-tiny-run
OUT=${OUT:-/tmp/forge-tiny-out}
mkdir -p "$RUN" "$OUT"
INIT=()
if [ ! -f "$RUN/last.pt" ] && ls ../../.cache/tiny-gpu/weights.pt.part.* >/dev/null 2>&1; then
  cat ../../.cache/tiny-gpu/weights.pt.part.* > "$RUN/init.pt"
  INIT=(--init "$RUN/init.pt")
fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
python3 -c "import torch, jinja2, numpy; print('torch', torch.__version__)"
PYTHONUNBUFFERED=1 python3 forge_train.py train --tokenizer tokenizer.json --dir "$RUN" --size gpu \
  --device cuda --minutes "$MINUTES" --total-minutes "$TOTAL" --workers 12 "${INIT[@]}" 2>&1 | tee "$OUT/train.log"
cp "$RUN/history.json" "$OUT/"
split -b 15m -d "$RUN/weights.pt" "$OUT/weights.pt.part."
ls -la "$OUT"
