#!/usr/bin/env bash
# Install herkit (editable) for training, reports and videos (its train, report and video
# extras), with the further extras given as arguments, e.g. `bash install.sh dev`.
# PyTorch is left alone when it is already importable, so a torch you brought (a CUDA
# build, a nightly) is kept. Otherwise torch 2.13.0 is installed first: where a local
# CPU wheel of it is on pip's find-links (as on the project's machines) pip takes that
# wheel instead of the multi-GB CUDA build that an unpinned `torch` would pull. The test and
# documentation tools (the dev and docs extras) come at the versions the project is tested
# with, from constraints.txt.
set -euo pipefail
cd "$(dirname "$0")"
python=${PYTHON:-python3}
if ! "$python" -c "import torch" >/dev/null 2>&1; then
    "$python" -m pip install "torch==2.13.0"
fi
extras=$(IFS=,; echo "train,report,video${*:+,$*}")
"$python" -m pip install -c constraints.txt -e ".[$extras]"
