"""The product's methods against ferret-xai's default explainers on the same model and sentences.

ferret (Attanasio et al. 2023, arXiv:2208.01575) explains a text with six default explainers
(``ferret.Benchmark``). For each SST-2 dev sentence of 18-22 words (``tools/bench_captum.py``'s
choice) the product's request (``engine.explain.explain_example``: the prediction, the method
and the result objects) and the matching ferret explainer call run one after the other, each pair
in turn and the order alternating from sentence to sentence (product first, then ferret first),
on the one shared model object:

=====================  ================================  ==========================================
row                    ferret explainer                  product method and parameters
=====================  ================================  ==========================================
``partition_shap``     Partition SHAP (shap's            ``partition_shap``: ``n_evals`` 500,
                       ``PartitionExplainer``, ``Text``  ``removal`` mask, ``output`` probability
                       masker over tokens, [MASK])       (its defaults)
``lime``               LIME (``lime``'s                  ``lime``: ``n_samples`` = ferret's count,
                       ``LimeTextExplainer`` over        ``removal`` mask
                       tokens, [MASK], ``bow=False``)
``saliency``           Gradient (Captum ``Saliency``,    ``saliency``: ``output`` logit
                       ``abs=True``, summed over the     (``reduction`` l2, its default)
                       hidden size: a token's L1 norm)
``grad_x_input``       Gradient (x Input)                ``grad_x_input``: ``output`` logit
``integrated_          Integrated Gradient (x Input):    ``integrated_gradients``: ``output``
gradients``            Captum IG, [PAD] baseline,        logit (``baseline`` pad, ``n_steps`` 50,
                       50 Gauss-Legendre steps           Gauss-Legendre: its defaults)
``ig_without_input``   Integrated Gradient (Captum IG,   ``integrated_gradients`` as above: the
                       ``multiply_by_inputs=False``)     product has no IG without x input
=====================  ================================  ==========================================

Sample counts (per sentence of n word pieces, n + 2 tokens with [CLS]/[SEP]):

- LIME: ferret draws ``min((n + 2)^2, 5000)`` samples (its default; [CLS]/[SEP] are features
  too, their scores zeroed afterwards); the product is given the same count through its
  ``n_samples`` parameter, so both sides score the same number of perturbed inputs (ferret's
  features are tokens, the product's words). ferret's ``LimeTextExplainer`` is seeded
  (``random_state`` 0; it is unseeded by default), the product's LIME with ``seed`` 0.
- Partition SHAP: both cap shap's ``max_evals`` at 500 (ferret's shap default; the product's
  ``n_evals`` default). ferret's players are the tokens (shap's ``Text`` masker: one [MASK] per
  absent token, as the tokenizer has a mask token, the masked text decoded to a string and
  tokenized again), the product's the words (one [MASK] per absent word, on token ids); both
  evaluate the target's probability.
  The evaluations each side actually spent are in ``sequences_per_sentence`` (below).
- Integrated gradients: 50 steps on both sides (Captum's default, which ferret keeps; the
  product's ``n_steps`` default); ferret sends them through the model in chunks of 8 rows, the
  product in its own batch size.
- Gradients: one forward and backward pass each.

A forward pre-hook on the shared model counts the model calls and sequences (batch rows) each
side sends per sentence (``calls_per_sentence`` / ``sequences_per_sentence``, means), so the
sample counts above can be checked. The product's counts include its prediction pass (saliency
and gradient x input read it off their own pass; integrated gradients also counts the two end
points of its convergence delta); its scorer scores
identical perturbed inputs once, so its LIME and Partition SHAP send fewer sequences than the
samples drawn (lime's sampler repeats the inputs with all or almost all words removed).

Word scores: ferret's token scores become word scores the way the product lines up an imported
ferret file (``engine.imports.align``) and ``tools/bench_captum.py`` does: ferret's tokens are
checked to be the model's own tokens of the sentence, special tokens are left out, and a word's
score is the sum of its tokens' scores (``tools.bench_captum._per_word`` with ``np.sum``). For
ferret's Gradient, whose token score is the L1 norm of the token's gradient, that sum is the
L1 norm over the word's pieces; the product's saliency gives the L2 norm (it offers l2 or a
signed sum, not L1). A sentence whose ferret tokens differ from the model's (none among the
sentences tried) is timed but left out of the correlation (``token_mismatches``). ``ig_without_input``: ferret sums
raw path gradients over the hidden size, which the embedding LayerNorm drives to about 0
(/work/shared/research/perf-anchors.md, observation 7), so its correlation with any product
method is not meaningful; the row is there for ferret's timing.

Evaluation (``--evaluate``, on by default; ``--no-evaluate`` leaves it out): ferret's
``Benchmark.evaluate_explanations`` on its explanations of the sentence, one per row (default
evaluators: AOPC comprehensiveness and sufficiency over 10%, 20%, ..., 100% of the tokens by
deletion, and tau-LOO, whose leave-one-out occlusion it recomputes for every explanation; the
plausibility evaluators need a rationale and are skipped) against the product's metrics on its
attributions of the sentence, one per row: ``comprehensiveness`` and ``sufficiency`` (ERASER bins
{1, 5, 10, 20, 50}% by deletion, every attribution's variants in one scorer call:
``metrics.faithfulness.score_attributions``) plus tau-LOO done the product's way: one
``loo_empty`` request, then ``metrics.agreement.kendall`` of each attribution with it. The
order alternates as for the explainers.

Before the measured sentences one untimed warm-up runs every pair on the shortest SST-2 dev
sentence of at least 5 words, so that neither side's first sentence pays the one-off costs of a
first call.

Prints one JSON object: per row the median seconds of each side, the ratio of the product's
total to ferret's, the mean Pearson correlation of the two word-score vectors, and the counts.

ferret cannot be installed into the product's venv (ferret-xai 0.4.2 pins numpy<2,
transformers<5, captum<0.8, shap<0.45, pandas<3, datasets<3, scikit-image<0.22), so it runs in a
separate venv that has the product's own pins, ferret without its dependencies and the modules
ferret imports (recipe of /work/shared/research/perf-anchors.md, section 1; pip reads the
product's requirements.txt, torch pinned in the same command so no CUDA wheels are pulled):

    python3.11 -m venv /work/ferret-venv
    /work/ferret-venv/bin/pip install torch==2.13.0 -r /work/main/requirements.txt
    /work/ferret-venv/bin/pip install --no-deps ferret-xai==0.4.2
    /work/ferret-venv/bin/pip install lime==0.2.0.1 datasets==5.2.0 seaborn pytreebank \\
        opencv-python-headless shap==0.51.0
    /work/ferret-venv/bin/pip install --no-deps thermostat-datasets==1.1.0
    /work/ferret-venv/bin/pip install overrides jsonnet spacy

(versions that worked: seaborn 0.13.2, pytreebank 0.2.7, opencv-python-headless 5.0.0.93,
overrides 7.7.0, jsonnet 0.22.0, spacy 3.8.18; ``pip check`` still lists ferret's pins.) The
product is not installed there: this script puts the repository root on ``sys.path``. Run:

    cd /work/main && ATTRIBUTION_DATA_DIR=/work/shared/data HF_HUB_OFFLINE=1 \\
        /work/ferret-venv/bin/python tools/bench_ferret.py [--limit 10] [--methods lime,saliency,...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# row -> (ferret explainer: its class name and multiply_by_inputs, product method)
ROWS: dict[str, tuple[str, bool | None, str]] = {
    "partition_shap": ("SHAPExplainer", None, "partition_shap"),
    "lime": ("LIMEExplainer", None, "lime"),
    "saliency": ("GradientExplainer", False, "saliency"),
    "grad_x_input": ("GradientExplainer", True, "grad_x_input"),
    "ig_without_input": ("IntegratedGradientExplainer", False, "integrated_gradients"),
    "integrated_gradients": ("IntegratedGradientExplainer", True, "integrated_gradients"),
}
LIME_MAX_SAMPLES = 5000  # ferret's LIMEExplainer.MAX_SAMPLES
SHAP_MAX_EVALS = 500  # shap's PartitionExplainer default, which ferret keeps


def product_params(method: str, n_tokens: int) -> dict[str, Any]:
    """The product's parameters matching ferret's call for a sentence of ``n_tokens`` tokens."""
    if method == "lime":
        return {"n_samples": min(n_tokens**2, LIME_MAX_SAMPLES), "removal": "mask"}
    if method == "partition_shap":
        return {"n_evals": SHAP_MAX_EVALS, "removal": "mask", "output": "probability"}
    return {"output": "logit"}  # the gradient methods: ferret differentiates the target's logit


def shown_params(method: str) -> dict[str, Any]:
    """``product_params`` as the report shows them (LIME's count is per sentence)."""
    params = product_params(method, 0)
    if method == "lime":
        params["n_samples"] = f"min((n + 2)^2, {LIME_MAX_SAMPLES}): ferret's count for the sentence"
    return params


class PassCounter:
    """Counts the calls and sequences (batch rows) that reach the model, through a pre-hook."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.calls = 0
        self.sequences = 0
        model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module, args, kwargs) -> None:
        batch = kwargs.get("input_ids")
        if batch is None:
            batch = kwargs.get("inputs_embeds")
        if batch is None and args:
            batch = args[0]
        self.calls += 1
        self.sequences += int(batch.shape[0]) if batch is not None else 0

    def read(self) -> tuple[int, int]:
        return self.calls, self.sequences


def ferret_explainers(model, tokenizer) -> dict[str, Any]:
    """ferret's default explainers (``ferret.Benchmark``'s list), one per row."""
    from ferret import Benchmark

    bench = Benchmark(model, tokenizer)
    by_kind = {(type(e).__name__, getattr(e, "multiply_by_inputs", None)): e for e in bench.explainers}
    return {"bench": bench, **{row: by_kind[(kind, times)] for row, (kind, times, _) in ROWS.items()}}


def ferret_call(explainer, text: str, target: int):
    """One ferret explanation: LIME seeded (ferret leaves lime's generator unseeded)."""
    if type(explainer).__name__ == "LIMEExplainer":
        return explainer(text, target, init_args={"random_state": 0})
    return explainer(text, target)


def same_tokens(clf, example, encoded) -> bool:
    """Whether ferret's tokens of the sentence's text (its ``_tokenize``) are the model's own."""
    return list(clf.tokenizer(example.text, truncation=True)["input_ids"]) == list(encoded.input_ids)


def ferret_word_scores(explanation, encoded) -> np.ndarray:
    """ferret's token scores summed per word (special tokens left out), as the product lines up
    an imported ferret file; the tokens must be the model's (``same_tokens``)."""
    from tools.bench_captum import _per_word

    return _per_word(np.asarray(explanation.scores, dtype=np.float64), encoded, np.sum)


def product_evaluation(clf, example, attributions: dict[str, Any], target: int) -> None:
    """The product's counterpart of ferret's default evaluators over the same number of
    attributions: comprehensiveness and sufficiency in one scorer call, and tau-LOO against one
    shared leave-one-out request."""
    from engine.explain import explain_example
    from metrics import agreement
    from metrics.faithfulness import score_attributions

    score_attributions(clf, example, attributions, {"comprehensiveness": None, "sufficiency": None})
    loo = explain_example(clf, example, ["loo_empty"], target=target).attributions["loo_empty"].scores
    for attribution in attributions.values():
        agreement.kendall(attribution.scores, loo)


def _median_ratio(times: dict[str, list[float]]) -> dict[str, float]:
    return {
        "product_median_s": statistics.median(times["product"]),
        "ferret_median_s": statistics.median(times["ferret"]),
        "product_over_ferret": sum(times["product"]) / sum(times["ferret"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm-sst2")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--methods", default=",".join(ROWS), help=f"rows, of: {', '.join(ROWS)}")
    parser.add_argument(
        "--evaluate", action=argparse.BooleanOptionalAction, default=True, help="time the evaluations too"
    )
    args = parser.parse_args()
    rows = args.methods.split(",")
    for row in rows:
        if row not in ROWS:
            parser.error(f"unknown row {row!r}; known: {', '.join(ROWS)}")
    evaluate = args.evaluate
    # Captum warns on every gradient call that ferret's input embeddings did not require a gradient.
    warnings.filterwarnings("ignore", message="Input Tensor 0 did not already require gradients")

    from core import datasets
    from core.classifier import Classifier
    from core.loaded import load_classifier
    from engine.explain import explain_example

    torch.manual_seed(0)
    loaded = load_classifier(args.model)
    clf = Classifier(loaded)
    dev = datasets.load_examples("sst2", "dev")
    sentences = [e for e in dev if 18 <= len(e.words) <= 22][: args.limit]
    warmup = min((e for e in dev if len(e.words) >= 5), key=lambda e: len(e.words))
    ferret = ferret_explainers(clf.model, clf.tokenizer)
    counter = PassCounter(clf.model)

    def run(side: str, row: str, example, encoded, target: int):
        method = ROWS[row][2]
        if side == "product":
            params = {method: product_params(method, len(encoded.input_ids))}
            return explain_example(clf, example, [method], target=target, params=params, seed=0).attributions[method]
        return ferret_call(ferret[row], example.text, target)

    def evaluation(side: str, example, target: int, explained: dict[str, Any]) -> None:
        if side == "product":
            product_evaluation(clf, example, explained["product"], target)
        else:
            ferret["bench"].evaluate_explanations(list(explained["ferret"].values()), target, show_progress=False)

    zero = {"product": [], "ferret": []}
    times: dict[str, dict[str, list[float]]] = {r: {s: [] for s in zero} for r in rows}
    passes: dict[str, dict[str, list[tuple[int, int]]]] = {r: {s: [] for s in zero} for r in rows}
    eval_times: dict[str, list[float]] = {s: [] for s in zero}
    eval_passes: dict[str, list[tuple[int, int]]] = {s: [] for s in zero}
    correlations: dict[str, list[float]] = {r: [] for r in rows}
    mismatches = 0
    for number, example in enumerate([warmup, *sentences]):
        measured = number > 0
        encoded = clf.encode(example)
        target = int(np.argmax(clf.predict_proba([encoded.variant])[0]))
        aligned = same_tokens(clf, example, encoded)
        mismatches += measured and not aligned
        explained: dict[str, dict[str, Any]] = {s: {} for s in zero}
        order = ("product", "ferret") if number % 2 == 1 else ("ferret", "product")
        for row in rows:
            for side in order:
                before = counter.read()
                start = time.perf_counter()
                explained[side][row] = run(side, row, example, encoded, target)
                elapsed = time.perf_counter() - start
                if measured:
                    times[row][side].append(elapsed)
                    passes[row][side].append(tuple(b - a for a, b in zip(before, counter.read(), strict=True)))
            if not (measured and aligned):
                continue
            ours = explained["product"][row].scores
            theirs = ferret_word_scores(explained["ferret"][row], encoded)
            if np.std(ours) > 0 and np.std(theirs) > 0:
                correlations[row].append(float(np.corrcoef(ours, theirs)[0, 1]))
        if evaluate:
            for side in order:
                before = counter.read()
                start = time.perf_counter()
                evaluation(side, example, target, explained)
                if measured:
                    eval_times[side].append(time.perf_counter() - start)
                    eval_passes[side].append(tuple(b - a for a, b in zip(before, counter.read(), strict=True)))

    def mean_passes(counts: list[tuple[int, int]]) -> dict[str, float]:
        return {
            "calls_per_sentence": statistics.mean(c for c, _ in counts),
            "sequences_per_sentence": statistics.mean(s for _, s in counts),
        }

    report: dict[str, Any] = {
        "model": args.model,
        "sentences": len(sentences),
        "mean_tokens": statistics.mean(len(clf.encode(e).input_ids) for e in sentences),
        "torch_threads": torch.get_num_threads(),
        "token_mismatches": mismatches,
        "methods": {
            r: {
                "ferret_explainer": ferret[r].NAME,
                "product_method": ROWS[r][2],
                "product_params": shown_params(ROWS[r][2]),
                **_median_ratio(times[r]),
                "mean_pearson": statistics.mean(correlations[r]) if correlations[r] else None,
                "pearson_sentences": len(correlations[r]),
                "product": mean_passes(passes[r]["product"]),
                "ferret": mean_passes(passes[r]["ferret"]),
            }
            for r in rows
        },
    }
    if evaluate:
        report["evaluation"] = {
            "ferret": f"Benchmark.evaluate_explanations: aopc_compr, aopc_suff, taucorr_loo of {len(rows)} explanations",
            "product": f"score_attributions: comprehensiveness, sufficiency of {len(rows)} attributions; loo_empty, kendall",
            **_median_ratio(eval_times),
            "product_passes": mean_passes(eval_passes["product"]),
            "ferret_passes": mean_passes(eval_passes["ferret"]),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
