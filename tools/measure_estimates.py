"""The app's time estimates against measured times, for BENCHMARKS.md (run on a quiet machine).

``python tools/measure_estimates.py PART`` with PART one of: ``calibrate`` (the embedding attack's
step against a mask step: ``services.estimates.ATTACK_STEP_COST``), ``im`` (the IM page's estimate
from leave-one-out's first run and from ``services.measured_rate``, in a fresh process), ``slice``
(``services.estimate_slice`` per method on 20 SST-2 dev sentences) and ``attack``
(``services.estimate_attack`` on three sentences, quick preset). Each prints table rows.
"""

import logging
import sys
import time

import services
from services import models

logging.disable(logging.WARNING)
m = models.default_model()
clf = models.classifier(m)
part = sys.argv[1]
if part == "im":  # a fresh process: the first leave-one-out is the model's first run
    ex = clf.fit_example(services.dataset_example("sst2", "dev", 5))[0]
    loo = services.explain(m, ex, ["loo_empty"]).attributions["loo_empty"]
    old_rate = loo.forward_passes / loo.runtime_s
    new_rate = services.measured_rate(m, ex)
    services.masked_lm()
    im = services.explain(m, ex, ["im"]).attributions["im"]
    old = services.estimate_cost("im", len(ex.words), {}, old_rate).seconds
    new = services.estimate_cost("im", len(ex.words), {}, new_rate).seconds
    print(
        f"IM sst2/dev/5 ({len(ex.words)} words): first LOO rate {old_rate:.0f}/s -> estimate {old:.2f} s; measured rate {new_rate:.0f}/s -> estimate {new:.2f} s; IM took {im.runtime_s:.2f} s"
    )
elif part == "slice":
    examples = services.slice_examples("sst2", "dev", 20)
    metrics = {"deletion": {}, "insertion": {}, "comprehensiveness": {}, "sufficiency": {}}
    services.masked_lm()
    services.evaluate_slice(m, examples[:2], ["loo_empty"], metrics)
    for method in ("loo_empty", "grad_x_input", "integrated_gradients", "lime", "partition_shap", "im"):
        est = services.estimate_slice(m, examples, [method], {}, [metrics])
        t = time.perf_counter()
        services.evaluate_slice(m, examples, [method], metrics)
        el = time.perf_counter() - t
        print(f"| {method} | {est.seconds:.1f} | {el:.1f} | {el / est.seconds:.2f} |", flush=True)
elif part == "attack":
    for i in (5, 12, 30):
        ex = clf.fit_example(services.dataset_example("sst2", "dev", i))[0]
        for attack, methods in (
            ("embedding", ("saliency", "grad_x_input", "integrated_gradients")),
            ("substitution", ("saliency", "integrated_gradients", "loo_empty")),
        ):
            for method in methods:
                est = services.estimate_attack(m, [ex], [method], attack, {}, "quick", {})
                r = services.attack(m, [ex], [method], attack=attack, attack_params={}, preset="quick")[0][method]
                print(
                    f"| {i} ({len(ex.words)} words) | {attack} | {method} | {est:.1f} | {r.runtime_s:.1f} | {r.runtime_s / est:.2f} |",
                    flush=True,
                )
elif part == "calibrate":
    from engine.bench import step_seconds

    for i in (5, 12, 30):
        ex = clf.fit_example(services.dataset_example("sst2", "dev", i))[0]
        s2 = step_seconds(clf, ex)
        t = {}
        for steps in (5, 45):
            r = services.attack(
                m,
                [ex],
                ["saliency"],
                attack="embedding",
                attack_params={"steps": steps, "patience": 10000, "stop_delta": 0.0},
                preset="quick",
            )[0]["saliency"]
            t[steps] = r.runtime_s
        per = (t[45] - t[5]) / 40
        print(
            f"sst2/dev/{i} ({len(ex.words)} words): mask step (2 rows) {s2 * 1000:.1f} ms, attack step (saliency) {per * 1000:.1f} ms: {per / s2:.2f}",
            flush=True,
        )
