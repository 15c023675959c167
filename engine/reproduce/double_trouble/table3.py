"""Table 3 of Pham, Bui, Mai & Nguyen 2022, "Double Trouble" (arXiv 2110.11929):
agreement with the human highlights of e-SNLI L2 (IoU, precision, recall, F1) at each method's
best threshold (Pham et al.'s, ``metrics.plausibility.best_threshold``), on the correctly
predicted examples only, kept per example for the paired check.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.types import ProgressFn
from engine.reproduce.base import SHARE, Finding, Reproduction, Resources, Row, compare, decide, examples
from engine.reproduce.double_trouble.common import ESNLI_HIGHLIGHTED, PAPER, SLICE, SMALL_MLM, SMALL_MODEL

# e-SNLI L2 (tokens highlighted by at least two of three annotators: our majority mask).
TABLE3 = {
    "IM": {"iou": 0.3316, "precision": 0.4599, "recall": 0.6085, "f1": 0.5239},
    "LOO_empty": {"iou": 0.3415, "precision": 0.4867, "recall": 0.6158, "f1": 0.5437},
    "LIME": {},  # printed for SST only (IoU 0.3193, F1 0.5677)
    "LIME_BERT": {},  # printed for SST only (IoU 0.3170, F1 0.5573)
}
TABLE3_METHODS = {"IM": "im", "LOO_empty": "loo_empty", "LIME": "lime", "LIME_BERT": "lime_mlm"}
THRESHOLD_KEYS = ("iou", "precision", "recall", "f1")


def table3(resources: Resources, limit: int, progress: ProgressFn | None) -> list[Row]:
    from engine.evaluate import evaluate_slice, metric_params
    from engine.slice_report import correct_only
    from metrics.plausibility import best_threshold, threshold_values

    label, dataset, split, model = ESNLI_HIGHLIGHTED
    params = metric_params(list(THRESHOLD_KEYS), {k: {"annotator": "majority"} for k in THRESHOLD_KEYS})
    evaluation = evaluate_slice(
        resources.classifier(model),
        examples(dataset, split, limit),
        list(TABLE3_METHODS.values()),
        params,
        seed=0,
        mlm=resources.mlm(),
        progress=progress,
    )
    correct = correct_only(evaluation).results  # Pham et al. score the correctly predicted examples only
    rows = []
    for name, method in TABLE3_METHODS.items():
        scored = [r for r in correct if method in r.attributions]
        pairs = [(r.example, r.attributions[method]) for r in scored]
        try:
            tau: float | None = best_threshold(pairs, "iou").best
        except ValueError:  # no example with a human highlight: nothing to score
            tau = None
        for key in THRESHOLD_KEYS:
            values: list[float | None] = [None] * len(evaluation.results)  # the slice's order, for paired checks
            if tau is not None:
                for r, v in zip(scored, threshold_values(pairs, tau, key), strict=True):
                    values[r.position] = v
            shown = f"{label} L2 · {key} · {name}" + (f" (tau {tau:.2f})" if tau is not None else "")
            rows.append(Row.scored(shown, (key, name), TABLE3[name].get(key), values, SHARE))
    return rows


def check_table3(rows: Sequence[Row]) -> Finding:
    """The paper: IM is no better than LOO_empty at agreeing with human highlights (LOO_empty's
    IoU and F1 at least IM's on e-SNLI L2). Paired on the same examples: it holds when LOO_empty's
    lead excludes 0 on both, does not hold when IM's does on one, and is undecided otherwise.
    LIME against LIME_BERT (printed for SST only) is reported, not checked."""
    finding = decide(
        [compare(rows, (key, "LOO_empty"), (key, "IM"), False, key) for key in ("iou", "f1")],
        "LOO_empty agrees with the humans better than IM",
        "IM beats LOO_empty",
    )
    lime = compare(rows, ("f1", "LIME"), ("f1", "LIME_BERT"), False, "f1")
    note = f"; LIME against LIME_BERT (the paper: LIME_BERT slightly below LIME, on SST): {lime.text()}"
    return Finding(finding.holds, finding.reason + (note if lime.n else ""))


REPRODUCTION = Reproduction(
    name="double-trouble-table3",
    paper=PAPER,
    table="Table 3",
    claim="IM is no better than LOO_empty at agreeing with human highlights, and LIME_BERT is slightly less plausible than LIME.",
    published=TABLE3,
    published_note="IoU, precision, recall, F1 at each method's best threshold tau, higher is better; negatives zeroed; correctly predicted dev examples; e-SNLI L2 (LIME rows are printed for SST only)",
    settings={
        "model": ESNLI_HIGHLIGHTED[3],
        "data": "esnli/dev_highlighted",
        "methods": TABLE3_METHODS,
        "metrics": {k: {"annotator": "majority (at least 2 of 3 annotators: L2)"} for k in THRESHOLD_KEYS},
        "threshold": "Pham et al.'s best tau over 0.05..0.95 by mean IoU, per method",
        "correct_only": True,
    },
    default_limit=8,
    compute=table3,
    check=check_table3,
    differences=(
        SMALL_MODEL,
        SMALL_MLM,
        SLICE,
        "the paper prints LIME and LIME_BERT on SST only; our SST-2 has no human highlights",
    ),
)
