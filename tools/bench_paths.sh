#!/usr/bin/env bash
# The CPU figures of issue 20's before/after table (BENCHMARKS.md, "The slow paths"), for one
# checkout: `tools/bench_paths.sh CHECKOUT OUT_DIR [STEPS]`. Run it for two checkouts on the same
# quiet machine, one after the other. STEPS (default: all) picks among: methods group eager panel
# cold evaluate attacks rss. The steps that need options a checkout lacks (--group, --attention) are
# skipped there. Uses this repository's .venv; the checkout's own code is what runs.
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
ROOT=$(cd "$1" && pwd)
OUT=$(mkdir -p "$2" && cd "$2" && pwd)
STEPS=${3:-"methods group eager panel cold evaluate attacks rss"}
PY=$HERE/.venv/bin/python
export HF_HUB_OFFLINE=1 ATTRIBUTION_DATA_DIR=${ATTRIBUTION_DATA_DIR:-$HERE/../shared/data}
cd "$ROOT" || exit 1
has() { "$PY" -m cli "$1" --help 2>/dev/null | grep -q -- "$2"; }
timed() {  # timed NAME COMMAND...: stdout to NAME.json, stderr and wall time to NAME.log
  local name=$1
  shift
  local start
  start=$(date +%s.%N)
  "$@" >"$OUT/$name.json" 2>"$OUT/$name.log"
  echo "$name exit $? $(echo "$(date +%s.%N) - $start" | bc) s" | tee -a "$OUT/times.txt"
}
want() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac }
BENCH=("$PY" -m cli bench --model minilm-sst2 --min-words 20 --max-words 20 --json)
SENTENCE="the film is a tense , well acted and often funny look at a family that never quite manages to say what it means"
FAST=loo_empty,saliency,grad_x_input,integrated_gradients,attention_mean,attention_rollout,random

want methods && timed methods "${BENCH[@]}" --limit 5 --methods all
if want group && has bench --group; then
  timed group "${BENCH[@]}" --limit 16 --group 8 --methods saliency,grad_x_input,attention_mean,attention_rollout,loo_empty,integrated_gradients
  timed group-optimisers "${BENCH[@]}" --limit 8 --group 8 --methods marc,aml
fi
want group && timed single "${BENCH[@]}" --limit 16 --methods saliency,grad_x_input,attention_mean,attention_rollout,loo_empty,integrated_gradients
if want eager && has bench --attention; then
  timed eager "${BENCH[@]}" --limit 5 --attention eager --methods loo_empty,saliency,integrated_gradients,occlusion,lime,im
  timed fused "${BENCH[@]}" --limit 5 --methods loo_empty,saliency,integrated_gradients,occlusion,lime,im
fi
if want panel; then
  timed import "$PY" -X importtime -c "import cli.main, engine.explain"
  timed panel-fast "$PY" -m cli explain --model minilm-sst2 --text "$SENTENCE" --methods $FAST --json
  timed panel-all "$PY" -m cli explain --model minilm-sst2 --text "$SENTENCE" --methods all --json
fi
if want cold; then  # one method from a new process; AML twice: the first run pre-trains (and, where
  # the checkout keeps pre-trained models, saves it under OUT/results), the second may read it back
  export ATTRIBUTION_RESULTS_DIR=$OUT/results
  timed cold-partition_shap "$PY" -m cli explain --model minilm-sst2 --text "$SENTENCE" --methods partition_shap --json
  timed cold-aml-first "$PY" -m cli explain --model minilm-sst2 --text "$SENTENCE" --methods aml --json
  timed cold-aml-again "$PY" -m cli explain --model minilm-sst2 --text "$SENTENCE" --methods aml --json
fi
want evaluate && timed evaluate "$PY" -m cli evaluate --model minilm-sst2 --dataset sst2 --split dev --limit 40 \
  --methods loo_empty,saliency,grad_x_input,integrated_gradients,attention_rollout,lime \
  --metrics deletion,insertion,comprehensiveness,sufficiency --seed 0 --quiet --json
if want attacks; then
  timed attack-embedding timeout 900 "$PY" -m cli attack --model minilm-sst2 --text "$SENTENCE" --attack embedding \
    --preset quick --methods saliency,integrated_gradients --json --quiet
  timed attack-substitution timeout 900 "$PY" -m cli attack --model minilm-sst2 --text "$SENTENCE" --attack substitution \
    --methods loo_empty,saliency,integrated_gradients --seed 0 --json --quiet
  has attack "explained per round" && timed attack-substitution-quick timeout 900 "$PY" -m cli attack \
    --model minilm-sst2 --text "$SENTENCE" --attack substitution --preset quick \
    --methods loo_empty,saliency,integrated_gradients --seed 0 --json --quiet
fi
if want rss; then  # the same measuring script in both checkouts
  [ -f tools/peak_rss.py ] || cp "$HERE/tools/peak_rss.py" tools/peak_rss.py
  timed rss "$PY" tools/peak_rss.py
fi
