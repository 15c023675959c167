"""Python per example of a dataset run: ``engine.evaluate.evaluate_slice`` on a BERT so small
(2 layers, width 32, random weights over the bundled model's real tokenizer) that its passes
cost little, so the time left is the engine's own per-example work: encoding, variants, result
objects, metric plans (issue 20: on a GPU this overhead, not the passes, bounds a whole run).

Runs the first ``--limit`` SST-2 dev sentences with six methods (leave-one-out, saliency,
gradient x input, integrated gradients, attention rollout, occlusion) and four metrics
(deletion, insertion, comprehensiveness, sufficiency), after an untimed warm-up on the first 16,
and prints the seconds, the forward passes and the model calls (batches: on a GPU each pays a
launch latency); ``--profile tottime`` (or ``cumulative``) also
prints cProfile's top functions. One torch thread, so the figure is the Python's.

    ATTRIBUTION_DATA_DIR=../shared/data .venv/bin/python tools/python_overhead.py [--limit 160] [--profile tottime]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import torch

METHODS = ["loo_empty", "saliency", "grad_x_input", "integrated_gradients", "attention_rollout", "occlusion"]
METRICS = ["deletion", "insertion", "comprehensiveness", "sufficiency"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=160)
    parser.add_argument(
        "--batch-size", type=int, default=64, help="the scorer's rows per pass (256: the GPU benchmark's)"
    )
    parser.add_argument("--profile", choices=("tottime", "cumulative"))
    args = parser.parse_args()

    from transformers import BertConfig, BertForSequenceClassification

    from core.classifier import Classifier
    from core.datasets import load_examples
    from core.loaded import classifier_from_model
    from core.models import load_tokenizer
    from engine.evaluate import evaluate_slice, metric_params

    torch.set_num_threads(1)
    torch.manual_seed(0)
    tokenizer = load_tokenizer("minilm-sst2")
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, num_labels=2,
    )  # fmt: skip
    model = BertForSequenceClassification(config).eval()
    clf = Classifier(classifier_from_model(model, tokenizer, name="tiny"), batch_size=args.batch_size)
    examples = load_examples("sst2", "dev", limit=args.limit)
    params = metric_params(METRICS)
    evaluate_slice(clf, examples[:16], METHODS, params, seed=0)  # warm-up
    before, calls = clf.forward_passes, clf.model_calls
    profile = cProfile.Profile() if args.profile else None
    start = time.perf_counter()
    if profile is not None:
        profile.enable()
    evaluate_slice(clf, examples, METHODS, params, seed=0)
    if profile is not None:
        profile.disable()
    print(
        f"{len(examples)} examples: {time.perf_counter() - start:.2f} s, {clf.forward_passes - before} forward passes"
        f" in {clf.model_calls - calls} model calls"
    )
    if profile is not None:
        pstats.Stats(profile).sort_stats(args.profile).print_stats(40)


if __name__ == "__main__":
    main()
