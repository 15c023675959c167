"""Forward throughput of a BERT-base-size classifier on CUDA at each precision (issue 20, GPU).

Batches of copies of one 25-token input through ``random:bert-base``: float32, float32 with
TF32 matrix products, CUDA autocast in float16 and bfloat16 (weights stay float32), and the
weights themselves in float16 and bfloat16; then the project's scorer (``Classifier.predict_proba``)
on 21 distinct variants, plain and under autocast. Times are medians of CUDA-event-timed repeats
after a warm-up. Prints one JSON object.

    python tools/gpu_precision.py [--batch 256] [--tokens 25]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _median_ms(run, repeats: int = 20) -> float:
    run()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main() -> int:
    from core.classifier import Classifier
    from core.loaded import load_classifier
    from core.types import Example

    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--tokens", type=int, default=25)
    args = parser.parse_args()
    loaded = load_classifier("random:bert-base", device="cuda")
    ids = torch.randint(1000, 30000, (args.batch, args.tokens), device="cuda")
    mask = torch.ones_like(ids)
    results: dict[str, float] = {}

    def forward(model, autocast=None):
        context = torch.autocast("cuda", dtype=autocast) if autocast else contextlib.nullcontext()

        def run():
            with torch.inference_mode(), context:
                model(input_ids=ids, attention_mask=mask)

        return run

    results["float32"] = _median_ms(forward(loaded.model))
    torch.backends.cuda.matmul.allow_tf32 = True
    results["tf32"] = _median_ms(forward(loaded.model))
    torch.backends.cuda.matmul.allow_tf32 = False
    results["autocast_float16"] = _median_ms(forward(loaded.model, torch.float16))
    results["autocast_bfloat16"] = _median_ms(forward(loaded.model, torch.bfloat16))
    for dtype in (torch.float16, torch.bfloat16):
        half = copy.deepcopy(loaded.model).to(dtype)
        results[f"weights_{str(dtype).removeprefix('torch.')}"] = _median_ms(forward(half))
        del half
    rates = {k: round(args.batch / (ms / 1000)) for k, ms in results.items()}

    words = tuple(f"word{i}" for i in range(20))
    clf = Classifier(loaded)
    encoded = clf.encode(Example(segments=(words,)))
    variants = [encoded.perturb(replace_words={w: ()}) for w in range(20)] + [encoded.variant]
    scorer = {
        "float32": _median_ms(lambda: clf.predict_proba(variants)),
        "autocast_float16": _median_ms(
            lambda: Classifier(loaded, autocast=True, autocast_dtype=torch.float16).predict_proba(variants)
        ),
        "autocast_bfloat16": _median_ms(
            lambda: Classifier(loaded, autocast=True, autocast_dtype=torch.bfloat16).predict_proba(variants)
        ),
    }
    print(
        json.dumps(
            {
                "device": torch.cuda.get_device_name(),
                "batch": args.batch,
                "tokens": args.tokens,
                "forward_ms": results,
                "forward_per_s": rates,
                "scorer_21_variants_ms": scorer,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
