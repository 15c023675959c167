"""``api.explain_many`` against a loop of ``api.explain`` over the same texts, in one process.

Both explain the first ``--limit`` SST-2 dev sentences with the same methods (the heatmap page's
panel by default), the model loaded once beforehand; the loop and the batched call alternate for
``--rounds`` rounds and the medians are printed, with the largest score difference between the two
(they must agree to float rounding).

    ATTRIBUTION_DATA_DIR=../shared/data .venv/bin/python tools/bench_explain_many.py [--limit 64]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm-sst2")
    parser.add_argument("--limit", type=int, default=64)
    parser.add_argument("--methods", default="panel")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import api
    from core.datasets import load_examples

    model = api.load(args.model)
    examples = load_examples("sst2", "dev", limit=args.limit)
    api.explain_many(model, examples[:4], args.methods, seed=0)  # warm-up: kernels, saved resources
    loop_s, many_s = [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        alone = [api.explain(model, example, args.methods, seed=0) for example in examples]
        loop_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        together = api.explain_many(model, examples, args.methods, seed=0)
        many_s.append(time.perf_counter() - start)
    difference = max(
        float(np.max(np.abs(a[key].scores - b[key].scores), initial=0.0))
        for a, b in zip(alone, together, strict=True)
        for key in a.attributions
    )
    loop, many = statistics.median(loop_s), statistics.median(many_s)
    print(f"{len(examples)} sentences, methods {', '.join(together[0].attributions)}")
    print(f"loop of api.explain: {loop:.2f} s (rounds: {', '.join(f'{t:.2f}' for t in loop_s)})")
    print(f"api.explain_many:    {many:.2f} s (rounds: {', '.join(f'{t:.2f}' for t in many_s)})")
    print(f"speed-up {loop / many:.2f}x; largest score difference {difference:.2e}")


if __name__ == "__main__":
    main()
