"""What a mask optimiser's step costs on this machine, and how much of it is the optimiser's own.

A MaRC step is one forward+backward pass over two rows (the masked and the complement input), and
steps run one after another, so on one sentence its time is bounded by that 2-row pass. The
benchmark's floor divides by the best forward+backward rate over batches of up to 50 rows.
This prints, for a 20-word SST-2 dev sentence:

- the forward+backward time per row at batch sizes 1 to 50 (``engine.bench.step_seconds``), and
  the 2-row row's time over the best row's: the ratio to the floor that a loop of 2-row passes
  with no work of its own would read;
- MaRC with a fixed number of steps against the same number of bare 2-row passes through
  ``Classifier.forward_embeds``, alternating in one process (medians of ``--rounds``).

    ATTRIBUTION_DATA_DIR=../shared/data .venv/bin/python tools/step_cost.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

BATCHES = (1, 2, 4, 8, 16, 32, 50)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm-sst2")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import torch

    import explainers
    from core.classifier import Classifier
    from core.datasets import load_examples
    from core.loaded import load_classifier
    from engine.bench import step_seconds

    clf = Classifier(load_classifier(args.model))
    example = next(e for e in load_examples("sst2", "dev") if len(e.words) == 20)
    encoded = clf.encode(example)
    print(
        f"{args.model}, a 20-word SST-2 dev sentence ({len(encoded.input_ids)} tokens), {torch.get_num_threads()} threads"
    )

    per_row = {batch: step_seconds(clf, example, batch) / batch for batch in BATCHES}
    best = min(per_row.values())
    print("batch  ms per row  / best")
    for batch, seconds in per_row.items():
        print(f"{batch:>5}  {seconds * 1e3:>10.2f}  {seconds / best:>6.2f}")

    spec = explainers.get("marc")
    params = spec.make_params({"n_steps": args.steps, "early_stop": False})
    target = int(clf.predict_proba_groups([[encoded.variant]])[0][0].argmax())
    embeds = clf.input_embeddings(torch.tensor([encoded.input_ids])).detach()

    def marc() -> float:
        return explainers.run_explainers(spec, clf, [example], [target], params=params)[0].runtime_s

    def bare() -> float:
        start = time.perf_counter()
        with torch.enable_grad():
            for _ in range(args.steps):
                rows = embeds.expand(2, -1, -1).clone().requires_grad_(True)
                logits = clf.forward_embeds(rows, encoded.variant)
                torch.autograd.grad(logits[:, target].sum(), rows)
        return time.perf_counter() - start

    marc(), bare()  # warm-up
    timings: dict[str, list[float]] = {"marc": [], "bare": []}
    for _ in range(args.rounds):
        timings["marc"].append(marc())
        timings["bare"].append(bare())
    marc_s, bare_s = (statistics.median(timings[k]) for k in ("marc", "bare"))
    print(f"MaRC, {args.steps} steps: {marc_s:.2f} s; {args.steps} bare 2-row passes: {bare_s:.2f} s")
    print(
        f"MaRC per step {marc_s / args.steps * 1e3:.1f} ms, bare {bare_s / args.steps * 1e3:.1f} ms, ratio {marc_s / bare_s:.2f}"
    )
    print(f"MaRC per step over the floor's per-row cost x 2: {marc_s / args.steps / (2 * best):.2f}")


if __name__ == "__main__":
    main()
