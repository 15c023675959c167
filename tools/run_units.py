"""The one-pass methods in a dataset run's units: units of consecutive rows against units in
length order (``engine.runs.worker.unit_order``), alternating in one process.

A run's unit explains its examples as one group: the gradient and attention methods share one
padded forward(/backward) pass. This explains the first ``--limit`` SST-2 dev sentences unit by
unit, as ``UnitWorker.run`` does (``explainers.run_explainers`` on each unit's examples, their
predicted classes explained), under both cuttings, and prints per method the seconds per example
and the ratio to the floor (``engine.bench``: passes over the model's best rate at the example's
length, the rate measured once per token length here), for each of ``--rounds`` rounds.

    ATTRIBUTION_DATA_DIR=../shared/data .venv/bin/python tools/run_units.py [--limit 256] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os

METHODS = ("saliency", "grad_x_input", "attention_mean", "attention_rollout")  # the one-pass methods


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm-sst2")
    parser.add_argument("--limit", type=int, default=256)
    parser.add_argument("--chunk-size", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--methods", default=",".join(METHODS))
    args = parser.parse_args()

    import numpy as np

    import explainers
    from core.classifier import Classifier
    from core.datasets import load_examples
    from core.loaded import load_classifier
    from engine.bench import floor_seconds, measure_throughput
    from engine.runs.worker import unit_order, unit_rows

    clf = Classifier(load_classifier(args.model))
    examples = load_examples("sst2", "dev", os.environ.get("ATTRIBUTION_DATA_DIR"), limit=args.limit)
    fitted = [clf.fit_example(example)[0] for example in examples]
    targets = [int(np.argmax(p)) for p in clf.predict_proba_groups([[clf.encode(e).variant] for e in fitted])]
    tokens = [clf.token_count(example) for example in fitted]
    rates = {}
    for length in sorted(set(tokens)):  # the rate depends on the length, not on the words
        rates[length] = measure_throughput(clf, fitted[tokens.index(length)])
    cuttings = {
        "consecutive rows": unit_rows(range(len(fitted)), args.chunk_size),
        "length order": unit_rows(unit_order(args.model, examples, args.chunk_size), args.chunk_size),
    }
    padded = {
        name: sum(max(tokens[i] for i in rows) * len(rows) for rows in units) / sum(tokens)
        for name, units in cuttings.items()
    }
    print(f"{len(fitted)} SST-2 dev sentences, {np.mean(tokens):.1f} tokens on average, units of {args.chunk_size}")
    print("padded tokens per token: " + ", ".join(f"{name} {value:.2f}" for name, value in padded.items()))
    methods = args.methods.split(",")
    for spec in (explainers.get(m) for m in methods):  # untimed: the eager-attention view and first growth
        explainers.run_explainers(spec, clf, fitted[: args.chunk_size], targets[: args.chunk_size])
    print("| round | units | " + " | ".join(f"{m} s/example (ratio)" for m in methods) + " |")
    for round_number in range(1, args.rounds + 1):
        for name, units in cuttings.items():
            cells = []
            for spec in (explainers.get(m) for m in methods):
                seconds = floor = 0.0
                for rows in units:
                    found = explainers.run_explainers(spec, clf, [fitted[i] for i in rows], [targets[i] for i in rows])
                    for row, attribution in zip(rows, found, strict=True):
                        seconds += attribution.runtime_s
                        passes = attribution.forward_passes, attribution.backward_passes
                        floor += floor_seconds(*passes, 0, rates[tokens[row]])
                cells.append(f"{seconds / len(fitted):.4f} ({seconds / floor:.2f})")
            print(f"| {round_number} | {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
