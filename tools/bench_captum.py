"""The product's methods against Captum's own, tuned, on the same model and sentences (issue 20:
"re-measured side by side with Captum (tuned)").

For each SST-2 dev sentence of 18-22 words (the benchmark's choice) the product's request
(``engine.explain.explain_example``: the prediction pass, the method and the result objects) and
the matching Captum call (Kokhlikyan et al. 2020, arXiv:2009.07896) run one after the other, each
method in turn and the order alternating from sentence to sentence, so both sides see the same
machine state, after one untimed run of every method on both sides (a short sentence):

- ``loo_pad``: Captum ``FeatureAblation`` over word groups of token ids, each word's tokens set
  to [PAD], ``perturbations_per_eval`` 64, on the target's log2-odds;
- ``saliency`` / ``grad_x_input``: Captum ``Saliency`` (``abs=False``) / ``InputXGradient`` on the
  input embeddings, on the target's probability; a word's score the L2 norm / sum of its tokens';
- ``integrated_gradients``: Captum ``LayerIntegratedGradients`` on the embedding layer, [PAD]
  baseline, 50 Gauss-Legendre steps, ``internal_batch_size`` 64 (all steps in one pass);
- ``lime`` / ``kernel_shap``: Captum ``Lime`` / ``KernelShap`` over words, [PAD] baseline, 1,000
  samples, ``perturbations_per_eval`` 64.

Prints one JSON object: per method the median seconds of each side, the ratio of the product's
total to Captum's, and the mean Pearson correlation of the two word-score vectors.

    .venv/bin/python tools/bench_captum.py [--limit 10] [--methods loo_pad,saliency,...]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import numpy as np
import torch

METHODS = ("loo_pad", "saliency", "grad_x_input", "integrated_gradients", "lime", "kernel_shap")


def _word_groups(encoded) -> torch.Tensor:
    """(1, seq) feature mask: each word's tokens share its index; special tokens the last index."""
    n = encoded.n_words
    return torch.tensor([[w if w is not None else n for w in encoded.word_ids]])


def _per_word(token_scores: np.ndarray, encoded, reduce) -> np.ndarray:
    return np.array([reduce(token_scores[list(encoded.word_positions(w))]) for w in range(encoded.n_words)])


def captum_scores(method: str, model, encoded, target: int, pad_id: int) -> np.ndarray:
    """The word scores of Captum's tuned call for ``method``."""
    from captum.attr import (
        FeatureAblation,
        InputXGradient,
        KernelShap,
        LayerIntegratedGradients,
        Lime,
        Saliency,
    )

    ids = torch.tensor([list(encoded.input_ids)])
    types = torch.tensor([list(encoded.token_type_ids)])
    special = torch.tensor([[w is None for w in encoded.word_ids]])
    baseline = torch.where(special, ids, torch.full_like(ids, pad_id))

    def probability(input_ids: torch.Tensor) -> torch.Tensor:
        attention = torch.ones_like(input_ids)
        logits = model(input_ids=input_ids, attention_mask=attention, token_type_ids=types.expand_as(input_ids)).logits
        return logits.softmax(-1)[:, target]

    def log2_odds(input_ids: torch.Tensor) -> torch.Tensor:
        p = probability(input_ids).clamp(1e-12, 1 - 1e-12)
        return torch.log2(p / (1 - p))

    def from_embeddings(embeds: torch.Tensor) -> torch.Tensor:
        logits = model(inputs_embeds=embeds, token_type_ids=types.expand(len(embeds), -1)).logits
        return logits.softmax(-1)[:, target]

    groups = _word_groups(encoded)
    if method == "loo_pad":
        scores = FeatureAblation(log2_odds).attribute(
            ids, baselines=baseline, feature_mask=groups, perturbations_per_eval=64
        )
        return _per_word(scores[0].detach().double().numpy(), encoded, np.mean)
    if method in ("saliency", "grad_x_input"):
        embeds = model.get_input_embeddings()(ids).detach()
        if method == "saliency":
            grads = Saliency(from_embeddings).attribute(embeds, abs=False)[0]
            return _per_word(
                grads.norm(dim=-1).detach().double().numpy(), encoded, lambda v: math.sqrt(float((v**2).sum()))
            )
        values = InputXGradient(from_embeddings).attribute(embeds)[0].sum(-1)
        return _per_word(values.detach().double().numpy(), encoded, np.sum)
    if method == "integrated_gradients":
        lig = LayerIntegratedGradients(probability, model.get_input_embeddings())
        values = lig.attribute(ids, baselines=baseline, n_steps=50, internal_batch_size=64)[0].sum(-1)
        return _per_word(values.detach().double().numpy(), encoded, np.sum)
    explainer = Lime(log2_odds) if method == "lime" else KernelShap(log2_odds)
    scores = explainer.attribute(
        ids, baselines=baseline, feature_mask=groups, n_samples=1000, perturbations_per_eval=64
    )
    return _per_word(scores[0].detach().double().numpy(), encoded, np.mean)


def _scores(side: str, method: str, clf, example, encoded, target: int) -> np.ndarray:
    """One side's word scores: the product's request or Captum's call."""
    if side == "product":
        from engine.explain import explain_example

        return explain_example(clf, example, [method], target=target, seed=0).attributions[method].scores
    with torch.no_grad() if method in ("loo_pad", "lime", "kernel_shap") else torch.enable_grad():
        return captum_scores(method, clf.model, encoded, target, clf.tokenizer.pad_token_id or 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm-sst2")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--methods", default=",".join(METHODS))
    args = parser.parse_args()
    methods = args.methods.split(",")

    from core import datasets
    from core.classifier import Classifier
    from core.loaded import load_classifier

    torch.manual_seed(0)
    loaded = load_classifier(args.model)
    clf = Classifier(loaded)
    dev = datasets.load_examples("sst2", "dev")
    sentences = [e for e in dev if 18 <= len(e.words) <= 22][: args.limit]
    # Untimed: every method on both sides once, so that no side's first request pays the
    # process's one-off costs (the first backward pass, lazy imports).
    warm_up = min((e for e in dev if len(e.words) >= 5), key=lambda e: len(e.words))
    encoded = clf.encode(warm_up)
    for method in methods:
        for side in ("product", "captum"):
            _scores(side, method, clf, warm_up, encoded, int(np.argmax(clf.predict_proba([encoded.variant])[0])))
    times: dict[str, dict[str, list[float]]] = {m: {"product": [], "captum": []} for m in methods}
    correlations: dict[str, list[float]] = {m: [] for m in methods}
    for number, example in enumerate(sentences):
        encoded = clf.encode(example)
        target = int(np.argmax(clf.predict_proba([encoded.variant])[0]))
        for method in methods:
            # Whoever runs first inherits the other's heap (after LIME's 1,000 samples, a slower
            # first allocation): the order alternates from one sentence to the next.
            scores = {}
            for side in ("product", "captum") if number % 2 == 0 else ("captum", "product"):
                start = time.perf_counter()
                scores[side] = _scores(side, method, clf, example, encoded, target)
                times[method][side].append(time.perf_counter() - start)
            ours, theirs = scores["product"], scores["captum"]
            if np.std(ours) > 0 and np.std(theirs) > 0:
                correlations[method].append(float(np.corrcoef(ours, theirs)[0, 1]))
    report = {
        "model": args.model,
        "sentences": len(sentences),
        "torch_threads": torch.get_num_threads(),
        "methods": {
            m: {
                "product_median_s": statistics.median(times[m]["product"]),
                "captum_median_s": statistics.median(times[m]["captum"]),
                "product_over_captum": sum(times[m]["product"]) / sum(times[m]["captum"]),
                "mean_pearson": statistics.mean(correlations[m]) if correlations[m] else None,
            }
            for m in methods
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
