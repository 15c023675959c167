"""What bfloat16 autocast does to the perturbation methods on this CPU: each method explains the
first ``--limit`` SST-2 dev sentences twice, in float32 and with the scorer under bfloat16
autocast (``--autocast bfloat16``), and the table gives the rank agreement of the two score
vectors (Spearman, median and worst sentence), how often the top word is the same, the largest
score difference relative to the largest score (median over sentences), and the time of each.

    ATTRIBUTION_DATA_DIR=../shared/data .venv/bin/python tools/cpu_autocast_precision.py [--limit 30]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

METHODS = "loo_empty,occlusion,lime,kernel_shap"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm-sst2")
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--limit", type=int, default=30)
    args = parser.parse_args()

    from scipy.stats import spearmanr

    import explainers
    from core.classifier import Classifier, autocast_options
    from core.datasets import load_examples
    from core.loaded import load_classifier

    loaded = load_classifier(args.model)
    examples = load_examples("sst2", "dev", limit=args.limit)
    sides = {"float32": Classifier(loaded), "bfloat16": Classifier(loaded, **autocast_options("bfloat16"))}
    print(
        "| method | Spearman, median | Spearman, worst | same top word | max difference / max score | float32 s | bfloat16 s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for key in args.methods.split(","):
        spec = explainers.get(key)
        rhos, same_top, differences = [], [], []
        seconds = dict.fromkeys(sides, 0.0)
        for example in examples:
            scores = {}
            for name, clf in sides.items():
                start = time.perf_counter()
                scores[name] = explainers.run_explainer(spec, clf, example, 1).scores
                seconds[name] += time.perf_counter() - start
            exact, fast = scores["float32"], scores["bfloat16"]
            if len(exact) > 2:
                rhos.append(spearmanr(exact, fast).statistic)
            same_top.append(np.argmax(exact) == np.argmax(fast))
            differences.append(np.abs(exact - fast).max() / max(np.abs(exact).max(), 1e-12))
        print(
            f"| {key} | {np.median(rhos):.3f} | {np.min(rhos):.3f} | {np.mean(same_top):.2f} | "
            f"{np.median(differences):.3f} | {seconds['float32']:.1f} | {seconds['bfloat16']:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
