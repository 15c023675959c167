"""What ``torch.compile`` would give the model's passes on this machine: eager against compiled
(inductor, static shapes) per row, for one-row and batched forwards and for the mask optimisers'
2-row forward+backward, on a 20-word SST-2 dev sentence. Each case runs eager and compiled twice,
alternating, and keeps the better median of each; the first compiled call (tracing and code
generation for that shape, or a read of inductor's on-disk cache) is timed on its own.

    ATTRIBUTION_DATA_DIR=../shared/data .venv/bin/python tools/compiled_model.py [--model minilm-sst2]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

CASES = (("forward", 1), ("forward", 32), ("forward+backward", 2), ("forward+backward", 16))


def median_seconds(run: Callable[[], None], repeats: int = 30) -> float:
    for _ in range(3):
        run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm-sst2")
    args = parser.parse_args()

    import torch

    from core.classifier import Classifier
    from core.datasets import load_examples
    from core.loaded import load_classifier

    clf = Classifier(load_classifier(args.model))
    example = next(e for e in load_examples("sst2", "dev") if len(e.words) == 20)
    ids = clf.encode(example).input_ids
    embeds = clf.input_embeddings(torch.tensor([ids])).detach()
    eager = clf.logits_model
    compiled = torch.compile(eager, dynamic=False)
    print(f"{args.model}, {len(ids)} tokens, {torch.get_num_threads()} threads, torch {torch.__version__}")

    def runner(model: torch.nn.Module, kind: str, batch: int) -> Callable[[], None]:
        rows = embeds.expand(batch, -1, -1).clone()
        mask = torch.ones(batch, rows.shape[1], dtype=torch.long)

        def run() -> None:
            if kind == "forward":
                with torch.no_grad():
                    model(inputs_embeds=rows, attention_mask=mask)
            else:
                x = rows.clone().requires_grad_(True)
                model(inputs_embeds=x, attention_mask=mask).logits[:, 0].sum().backward()

        return run

    print("pass              batch  eager ms/row  compiled ms/row  compiled/eager  first compiled call s")
    for kind, batch in CASES:
        start = time.perf_counter()
        runner(compiled, kind, batch)()
        first = time.perf_counter() - start
        rounds = [
            (median_seconds(runner(eager, kind, batch)), median_seconds(runner(compiled, kind, batch))) for _ in "ab"
        ]
        e, c = min(r[0] for r in rounds) / batch, min(r[1] for r in rounds) / batch
        print(f"{kind:<17} {batch:>5}  {e * 1e3:>12.2f}  {c * 1e3:>15.2f}  {c / e:>14.2f}  {first:>21.1f}")


if __name__ == "__main__":
    main()
