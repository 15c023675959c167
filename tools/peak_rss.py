"""Peak resident memory of long explanations (issue 20, item 7; the bound is in
docs/ARCHITECTURE.md, "Memory").

An ERASER movie review longer than the model accepts, cut to its 512 tokens, explained for its
predicted class by LIME (5,000 samples) and by integrated gradients (300 steps) with the bundled
movies classifier. Each method runs in a fresh process, so one's peak does not hide the other's;
the process reports its peak resident set size (``resource.getrusage``'s ``ru_maxrss``) after
loading the model and after explaining.

    python tools/peak_rss.py [--methods lime,integrated_gradients] [--samples 5000] [--steps 300]
                             [--batch-size 64] [--model minilm-movies]

Prints one JSON object per method: peak RSS after loading and after explaining (MiB), the
difference, tokens, seconds and forward/backward passes.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _child(args: argparse.Namespace) -> dict:
    sys.path.insert(0, str(ROOT))
    import torch

    import explainers
    from core.classifier import Classifier
    from core.datasets import load_examples
    from core.loaded import load_classifier

    torch.set_num_threads(args.threads)
    clf = Classifier(load_classifier(args.model), batch_size=args.batch_size)
    example = next(e for e in load_examples("movie-reviews", "validation") if clf.fit_example(e)[1] > 0)
    example = clf.fit_example(example)[0]
    encoded = clf.encode(example)
    target = int(clf.predict_proba([encoded.variant])[0].argmax())
    overrides = {"lime": {"n_samples": args.samples}, "integrated_gradients": {"n_steps": args.steps}}
    spec = explainers.get(args.child)
    loaded = _peak_mib()
    start = time.perf_counter()
    attribution = explainers.run_explainer(spec, clf, example, target, spec.make_params(overrides.get(args.child)))
    return {
        "method": args.child,
        "params": attribution.params,
        "example": example.id,
        "words": len(example.words),
        "tokens": len(encoded.input_ids),
        "batch_size": args.batch_size,
        "rows_per_pass": clf.rows_for(len(encoded.input_ids)),
        "seconds": round(time.perf_counter() - start, 2),
        "forward_passes": attribution.forward_passes,
        "backward_passes": attribution.backward_passes,
        "peak_rss_loaded_mib": round(loaded, 1),
        "peak_rss_mib": round(_peak_mib(), 1),
        "explaining_mib": round(_peak_mib() - loaded, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", default="lime,integrated_gradients")
    parser.add_argument("--samples", type=int, default=5000, help="LIME samples")
    parser.add_argument("--steps", type=int, default=300, help="integrated gradients steps")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--model", default="minilm-movies")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args)))
        return 0
    for method in args.methods.split(","):
        command = [sys.executable, __file__, "--child", method] + [
            f"--{name}={getattr(args, name.replace('-', '_'))}"
            for name in ("samples", "steps", "batch-size", "model", "threads")
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
        print(done.stdout.strip().splitlines()[-1], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
