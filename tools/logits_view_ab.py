"""The logits view's gain, measured in one process: every timing is taken twice, once with the
classifier's logits-only passes on the full model and once on the view whose last layer runs at
the first token only (``core.first_token_view``), alternating, so both sides see the same machine
load (on a noisy machine two processes run minutes apart do not).

Times the raw passes (forward on 64 copies of a sentence, forward+backward on 2: a mask
optimiser's step), then the chosen methods on the first ``--limit`` SST-2 dev sentences of 20
words, one at a time, and prints the medians and the ratio view / full.

    ATTRIBUTION_DATA_DIR=../shared/data .venv/bin/python tools/logits_view_ab.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

METHODS = "loo_empty,occlusion,lime,integrated_gradients,deeplift,marc"
# MaRC with a fixed number of steps (no early stop), so both sides run the same work.
OVERRIDES = {"marc": {"n_steps": 60, "early_stop": False}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm-sst2")
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--limit", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import explainers
    from core.classifier import Classifier
    from core.datasets import load_examples
    from core.loaded import load_classifier
    from engine.bench import _runners

    loaded = load_classifier(args.model)
    sides = {"full": loaded.model, "view": loaded.logits_model}
    if sides["view"] is loaded.model:
        raise SystemExit(f"{args.model} has no first-token view: nothing to compare")
    examples = [e for e in load_examples("sst2", "dev") if len(e.words) == 20][: args.limit]

    def timed(run: Callable[[], object]) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {side: [] for side in sides}
        for _ in range(args.rounds):
            for side, model in sides.items():
                loaded._logits = model  # the cached view, or the full model in its place
                start = time.perf_counter()
                run()
                out[side].append(time.perf_counter() - start)
        loaded._logits = sides["view"]
        return out

    def report(label: str, times: dict[str, list[float]]) -> None:
        full, view = statistics.median(times["full"]), statistics.median(times["view"])
        print(f"{label:34s} full {full * 1000:9.1f} ms   view {view * 1000:9.1f} ms   view/full {view / full:.3f}")

    forward, forward_backward = _runners(Classifier(loaded), examples[0])
    for batch, runner, label in ((64, forward, "forward, 64 rows"), (2, forward_backward, "forward+backward, 2 rows")):
        runner(batch)  # warm-up
        report(label, timed(lambda runner=runner, batch=batch: [runner(batch) for _ in range(5)]))
    for key in args.methods.split(","):
        spec = explainers.get(key)
        params = spec.make_params(OVERRIDES.get(key, {}))

        def explain_all(spec=spec, params=params) -> None:
            clf = Classifier(loaded)
            for example in examples:
                explainers.run_explainer(spec, clf, example, 1, params)

        explain_all()  # warm-up
        report(f"{key} ({len(examples)} sentences)", timed(explain_all))


if __name__ == "__main__":
    main()
