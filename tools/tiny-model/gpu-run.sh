#!/usr/bin/env bash
# forge-tiny v2, GPU run (models/README.md): one invocation trains for MINUTES of step time and
# resumes from /tmp/forge-tiny-run (same machine, optimizer state kept) or from the bf16 weights
# split into .cache/tiny-gpu/weights.pt.part.* (a fresh machine: fresh optimizer).
# Usage: tools/tiny-model/gpu-run.sh MINUTES TOTAL_MINUTES [extra forge_train.py train flags]
# (writes the log, history.json and the bf16 weights split in 15 MB parts to $OUT). Sized for a
# lease of about 15 minutes of device time: one call of 7.5 minutes of step time (the per-call
# limit is 10 minutes, the machine's start takes one or two). The weights saved last come back
# even when the trainer is stopped early (it saves every --save-every seconds).
# v3 ran `gpu-run.sh 7.5 7.5 …` from scratch; v4 continued v3's weights with `gpu-run.sh 7 14.5 …`
# after unpacking them into .cache/tiny-gpu/weights.pt.part.* (models/README.md has both commands).
set -uo pipefail
cd "$(dirname "$0")"
MINUTES=${1:-7.5}
TOTAL=${2:-7.5}
shift $(( $# < 2 ? $# : 2 ))
RUN=/tmp/forge-tiny-run
OUT=${OUT:-/tmp/forge-tiny-out}
mkdir -p "$RUN" "$OUT"
INIT=()
if [ ! -f "$RUN/last.pt" ] && ls ../../.cache/tiny-gpu/weights.pt.part.* >/dev/null 2>&1; then
  cat ../../.cache/tiny-gpu/weights.pt.part.* > "$RUN/init.pt"
  INIT=(--init "$RUN/init.pt")
fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
python3 -c "import torch, jinja2, numpy; print('torch', torch.__version__)" || exit 1
WORKERS=$(( $(nproc) > 4 ? $(nproc) - 3 : 1 ))
PYTHONUNBUFFERED=1 python3 forge_train.py train --tokenizer tokenizer.json --dir "$RUN" --size gpu \
  --device cuda --minutes "$MINUTES" --total-minutes "$TOTAL" --workers "$WORKERS" --save-every 60 \
  "${INIT[@]}" "$@" 2>&1 | tee "$OUT/train.log"
status=${PIPESTATUS[0]}
[ -f "$RUN/history.json" ] && cp "$RUN/history.json" "$OUT/"
[ -f "$RUN/weights.pt" ] && split -b 15m -d "$RUN/weights.pt" "$OUT/weights.pt.part."
ls -la "$OUT"
exit "$status"
