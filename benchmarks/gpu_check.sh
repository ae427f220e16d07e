#!/usr/bin/env bash
# The GPU check: one script for a machine with CUDA and PyTorch that reaches no package
# index, about 10 minutes in all. From the repository root, with the wheels that
# `python benchmarks/gpu.py wheels` put in .whl/ carried along:
#
#     HERKIT_COMMIT=<commit> OUT=<dir> bash benchmarks/gpu_check.sh
#
# It installs the wheels (herkit itself runs from src/), then, each phase within its
# share of the time left:
#   1. the device tests (captured updates against eager ones, the buffer on the GPU);
#   2. herkit bench update (sample + update per size, precision and mode, GPU busy share;
#      then prioritized replay: its priorities on the host, or on the GPU in the graph;
#      then GCIVL at OGBench's size, its value and actor goals drawn on the GPU);
#   3. herkit train FetchPush-v4 --device cuda --target-success 0.9 (its GPU preset);
#   4. herkit train FetchSlide-v4 --device cuda for the time Push leaves (a minute at least).
# and leaves its files in one archive, $OUT/check.tgz (a device call brings back at most 8
# files), for `python benchmarks/gpu.py record check.tgz` here, and its log on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/herkit-gpu-check}
BUDGET=${BUDGET:-570}  # seconds for the whole check
WORK=$(mktemp -d)  # the check's files, archived into $OUT/check.tgz however it ends
mkdir -p "$OUT"
trap 'tar czf "$OUT/check.tgz" -C "$WORK" . && echo "gpu_check: $(ls "$WORK" | wc -l) files in $OUT/check.tgz"' EXIT
started=$(date +%s)
left() { echo $(( BUDGET - ($(date +%s) - started) )); }
share() { local want=$1 rest; rest=$(( $(left) - ${2:-0} )); echo $(( want < rest ? want : rest )); }

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || { echo "gpu_check: the wheels did not install"; exit 1; }
# no MUJOCO_GL: nothing here renders, and MUJOCO_GL=egl fails where no libEGL is installed
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1
python3 - <<EOF > "$WORK/code.json"
import json, torch
print(json.dumps({"commit": "${HERKIT_COMMIT:-unknown}", "torch": torch.__version__,
                  "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0)}))
EOF
cat "$WORK/code.json"

echo "== 1. device tests"
timeout "$(share 200 370)" python3 -m pytest -q -p no:cacheprovider \
    tests/test_update_modes.py tests/test_device_buffer.py tests/test_her_relabel.py \
    tests/test_device_sampler.py tests/test_device_priority.py tests/test_step_state.py \
    tests/test_policy.py 2>&1 | tee "$WORK/tests.log" | tail -15

echo "== 2. herkit bench update"
timeout "$(share 120 250)" python3 -m herkit bench update --device cuda --seconds 1 \
    --modes eager captured compiled-captured --json-out "$WORK/bench.json"
timeout "$(share 50 200)" python3 -m herkit bench update --device cuda --seconds 1 \
    --sizes 3x512ln:2048 --precisions bf16 --modes eager captured --prioritized \
    --json-out "$WORK/bench-prioritized.json"
timeout "$(share 50 160)" python3 -m herkit bench update --device cuda --seconds 1 \
    --algos gcivl --sizes 3x512:1024 --precisions fp32 bf16 --modes eager captured \
    compiled-captured --json-out "$WORK/bench-gcivl.json"

run() {  # NAME ENV SECONDS [FLAGS...]: a timed run, stopped by SIGTERM (checkpoint, summary)
    local name=$1 env=$2 seconds=$3; shift 3
    echo "== herkit train $env --device cuda for at most ${seconds} s"
    timeout --signal=TERM --kill-after=60 "$seconds" python3 -m herkit train "$env" \
        --device cuda --steps 3000000 --out "/tmp/$name" --overwrite --no-progress "$@"
    for file in summary.json config.json progress.csv; do
        [ -f "/tmp/$name/$file" ] && cp "/tmp/$name/$file" "$WORK/$name-$file"
    done
    tail -n 3 "/tmp/$name/progress.csv" 2>/dev/null
}
echo "== 3. FetchPush"
run push FetchPush-v4 "$(share 300 0)" --target-success 0.9
if [ "$(left)" -ge 60 ]; then  # what Push left: Slide's rates and the start of its curve
    echo "== 4. FetchSlide"
    run slide FetchSlide-v4 "$(share 1200 0)" --target-success 0.8
fi
rm -f "$WORK/slide-config.json"  # Slide's settings are Push's preset
echo "gpu_check: done in $(( $(date +%s) - started )) s"
