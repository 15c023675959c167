"""Table 1 (a) of Pham, Bui, Mai & Nguyen 2022, "Double Trouble" (arXiv 2110.11929):
the AUC of Deletion and of Deletion_BERT (the word replaced by a masked-LM fill-in) for IM and the
three LOO variants. Attributions and faithfulness through ``engine.evaluate.evaluate_slice`` /
``score_attribution`` (Deletion and Deletion_BERT under ``convention="pham2022"``).
"""

from __future__ import annotations

from collections.abc import Sequence

from core.types import ProgressFn
from engine.reproduce.base import (
    SHARE,
    Finding,
    Reproduction,
    Resources,
    Row,
    compare,
    decide,
    examples,
    scaled_progress,
)
from engine.reproduce.double_trouble.common import ESNLI, PAPER, SLICE, SMALL_MLM, SMALL_MODEL, SST2

# Pham et al.'s LOO_zero replaces the word by [PAD] (its Sec. 4): our loo_pad.
TABLE1_METHODS = {"IM": "im", "LOO_zero": "loo_pad", "LOO_unk": "loo_unk", "LOO_empty": "loo_empty"}
TABLE1 = {
    ("SST-2", "Deletion"): (0.4732, 0.4374, 0.4464, 0.4241),
    ("SST-2", "Deletion_BERT"): (0.4922, 0.4970, 0.5047, 0.5065),
    ("e-SNLI", "Deletion"): (0.3912, 0.2798, 0.3742, 0.2506),
    ("e-SNLI", "Deletion_BERT"): (0.2816, 0.3240, 0.3636, 0.3328),
}


def table1(resources: Resources, limit: int, progress: ProgressFn | None) -> list[Row]:
    from engine.evaluate import evaluate_slice, metric_params, score_attribution
    from metrics.faithfulness import CurveParams

    deletion = {"removal": "delete", "convention": "pham2022"}
    bert = CurveParams(removal="mlm", convention="pham2022")
    rows: list[Row] = []
    for d, (label, dataset, split, model) in enumerate((SST2, ESNLI)):
        clf = resources.classifier(model)
        mlm = resources.mlm()
        evaluation = evaluate_slice(
            clf,
            examples(dataset, split, limit),
            list(TABLE1_METHODS.values()),
            metric_params(["deletion"], {"deletion": deletion}),
            seed=0,
            mlm=mlm,
            progress=scaled_progress(progress, d / 2, 0.4),
        )
        bert_values = {
            method: [
                score_attribution(clf, r.example, r.attributions[method], {"deletion": bert}, mlm=mlm)["deletion"].value
                if method in r.attributions
                else None
                for r in evaluation.results
            ]
            for method in TABLE1_METHODS.values()
        }
        for metric in ("Deletion", "Deletion_BERT"):
            for column, (name, method) in enumerate(TABLE1_METHODS.items()):
                if metric == "Deletion":
                    vals = [
                        r.metrics[method]["deletion"].value if method in r.metrics else None for r in evaluation.results
                    ]
                else:
                    vals = bert_values[method]
                shown = f"{label} · {metric} · {name}"
                rows.append(Row.scored(shown, (label, metric, name), TABLE1[(label, metric)][column], vals, SHARE))
    return rows


def check_table1(rows: Sequence[Row]) -> Finding:
    """The paper's caption: IM is the best (lowest-AUC) method under Deletion_BERT but the worst
    under Deletion. On every dataset, IM against each LOO variant on the same examples: its paired
    difference must be below 0 under Deletion_BERT and above 0 under Deletion."""
    comparisons = []
    for dataset in sorted({row.key[0] for row in rows}):
        for other in (name for name in TABLE1_METHODS if name != "IM"):
            comparisons.append(compare(rows, (dataset, "Deletion_BERT", "IM"), (dataset, "Deletion_BERT", other), True))
            comparisons.append(compare(rows, (dataset, "Deletion", other), (dataset, "Deletion", "IM"), True))
    return decide(
        comparisons,
        "IM is the best under Deletion_BERT and the worst under Deletion on every dataset",
        "the ranking does not flip as the paper says",
    )


REPRODUCTION = Reproduction(
    name="double-trouble-table1",
    paper=PAPER,
    table="Table 1 (a)",
    claim="IM is the best method under Deletion_BERT but the worst under Deletion: the winner flips with the metric's perturbation.",
    published=TABLE1,
    published_note="AUC of the explained class's probability over the first 20% of words removed, lower is better; BERT-base classifiers, dev sets",
    settings={
        "models": {"SST-2": SST2[3], "e-SNLI": ESNLI[3]},
        "data": {"SST-2": "sst2/dev", "e-SNLI": "esnli/dev"},
        "methods": TABLE1_METHODS,
        "metrics": {
            "Deletion": {"removal": "delete", "fraction": 0.2, "convention": "pham2022"},
            "Deletion_BERT": {"removal": "mlm", "fraction": 0.2, "convention": "pham2022"},
        },
        "masked_lm": "minilm-mlm",
        "target": "predicted",
    },
    default_limit=40,
    compute=table1,
    check=check_table1,
    differences=(
        SMALL_MODEL,
        SMALL_MLM,
        SLICE,
        (
            "the paper's LOO_zero ([PAD] in place of the word, Pham et al. 2022 Sec. 4) is the method called"
            " loo_pad here; not this app's loo_zero, another method (leave-one-out: zero the word's input embedding)"
        ),
    ),
)
