"""The one-pass methods in a dataset run's units, under several cuttings, alternating in one
process: units of ``--chunk-sizes`` rows, each in a run's length order
(``engine.runs.worker.unit_order``: the whole selection sorted), sorted only within windows of
eight units (``windowed``: how slices and runs cut them before the whole selection was sorted)
and, with ``--consecutive``, in the rows' own order (how runs cut them before that).

A run's unit explains its examples as one group: the gradient and attention methods share one
padded forward(/backward) pass. This explains the first ``--limit`` SST-2 dev sentences unit by
unit, as ``UnitWorker.run`` does (``explainers.run_explainers`` on each unit's examples, their
predicted classes explained), under every cutting, and prints per method the seconds per example
and the ratio to the floor (``engine.bench``: passes over the model's best rate at the example's
length, the rate measured once per token length here), for each of ``--rounds`` rounds.

    ATTRIBUTION_DATA_DIR=../shared/data .venv/bin/python tools/run_units.py [--limit 256] [--rounds 3]
        [--chunk-sizes 16,32] [--consecutive]
"""

from __future__ import annotations

import argparse
import os

METHODS = ("saliency", "grad_x_input", "attention_mean", "attention_rollout")  # the one-pass methods


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm-sst2")
    parser.add_argument("--limit", type=int, default=256)
    parser.add_argument("--chunk-sizes", default="16,32", help="rows per unit, comma-separated")
    parser.add_argument("--consecutive", action="store_true", help="also units of consecutive rows")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--methods", default=",".join(METHODS))
    args = parser.parse_args()

    import numpy as np

    import explainers
    from core.classifier import Classifier
    from core.datasets import load_examples
    from core.loaded import load_classifier
    from engine.bench import floor_seconds, measure_throughput
    from engine.runs.worker import token_lengths, unit_order, unit_rows

    clf = Classifier(load_classifier(args.model))
    examples = load_examples("sst2", "dev", os.environ.get("ATTRIBUTION_DATA_DIR"), limit=args.limit)
    fitted = [clf.fit_example(example)[0] for example in examples]
    targets = [int(np.argmax(p)) for p in clf.predict_proba_groups([[clf.encode(e).variant] for e in fitted])]
    tokens = [clf.token_count(example) for example in fitted]
    rates = {}
    for length in sorted(set(tokens)):  # the rate depends on the length, not on the words
        rates[length] = measure_throughput(clf, fitted[tokens.index(length)])
    cuttings = {}
    lengths = token_lengths(args.model, examples)[0]  # the run's own length order, tokenized once
    for size in (int(size) for size in args.chunk_sizes.split(",")):
        if args.consecutive:
            cuttings[f"{size} consecutive rows"] = unit_rows(range(len(fitted)), size)
        cuttings[f"{size} sorted in windows"] = windowed(tokens, size)
        cuttings[f"{size} in length order"] = unit_rows(unit_order(lengths, size), size)
    padded = {
        name: sum(max(tokens[i] for i in rows) * len(rows) for rows in units) / sum(tokens)
        for name, units in cuttings.items()
    }
    print(f"{len(fitted)} SST-2 dev sentences, {np.mean(tokens):.1f} tokens on average")
    print("padded tokens per token: " + ", ".join(f"{name} {value:.2f}" for name, value in padded.items()))
    methods = args.methods.split(",")
    for spec in (explainers.get(m) for m in methods):  # untimed: the eager-attention view and first growth
        explainers.run_explainers(spec, clf, fitted[:16], targets[:16])
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


def windowed(tokens: list[int], size: int) -> list[list[int]]:
    """Units of ``size`` rows, the rows sorted by ``tokens`` within windows of eight units."""
    window = 8 * size
    units = []
    for start in range(0, len(tokens), window):
        part = sorted(range(start, min(start + window, len(tokens))), key=tokens.__getitem__)
        units.extend(part[k : k + size] for k in range(0, len(part), size))
    return units


if __name__ == "__main__":
    main()
