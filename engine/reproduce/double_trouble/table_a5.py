"""Table A5 of Pham, Bui, Mai & Nguyen 2022, "Double Trouble" (arXiv 2110.11929): how
much LOO_empty's and IM's attributions change when the classifier head is re-initialised, through
``experiments.randomization.run_randomization``.
"""

from __future__ import annotations

import math
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

TABLE_A5 = {
    ("SST-2", "sign_change", "LOO_empty"): 71.41,
    ("SST-2", "sign_change", "IM"): 62.27,
    ("e-SNLI", "sign_change", "LOO_empty"): 56.07,
    ("e-SNLI", "sign_change", "IM"): 49.57,
    ("SST-2", "mean_abs_change", "LOO_empty"): 0.46,
    ("SST-2", "mean_abs_change", "IM"): 0.31,
    ("e-SNLI", "mean_abs_change", "LOO_empty"): 0.26,
    ("e-SNLI", "mean_abs_change", "IM"): 0.16,
}
TABLE_A5_METHODS = {"LOO_empty": "loo_empty", "IM": "im"}


def table_a5(resources: Resources, limit: int, progress: ProgressFn | None) -> list[Row]:
    from experiments.randomization import HEAD, run_randomization

    rows = []
    for d, (label, dataset, split, model) in enumerate((SST2, ESNLI)):
        result = run_randomization(
            resources.classifier(model),
            examples(dataset, split, limit),
            list(TABLE_A5_METHODS.values()),
            mode="independent",
            components=[HEAD],
            seed=0,
            mlm=resources.mlm(),
            progress=scaled_progress(progress, d / 2, 0.5),
        )
        step = [s.name for s in result.steps].index(HEAD)
        for measure, scale, unit in (
            ("sign_change", 100.0, "% words changing sign"),
            ("mean_abs_change", 1.0, "mean |change|"),
        ):
            for name, method in TABLE_A5_METHODS.items():
                vals = [getattr(e.similarities[step][method], measure) for e in result.examples]
                bounds = SHARE if measure == "sign_change" else (0.0, math.inf)
                published = TABLE_A5[(label, measure, name)]
                rows.append(
                    Row.scored(f"{label} · {unit} · {name}", (label, measure, name), published, vals, bounds, scale)
                )
    return rows


def check_table_a5(rows: Sequence[Row]) -> Finding:
    """The paper: after the classification layer is re-initialised, more words change sign under
    LOO_empty than under IM (IM is less sensitive to the model), on every dataset; paired on the
    same examples."""
    datasets = sorted({row.key[0] for row in rows})
    return decide(
        [compare(rows, (d, "sign_change", "LOO_empty"), (d, "sign_change", "IM"), False, d) for d in datasets],
        "LOO_empty changes sign more often than IM",
        "IM changes sign more often than LOO_empty",
    )


REPRODUCTION = Reproduction(
    name="double-trouble-tableA5",
    paper=PAPER,
    table="Table A5",
    claim="After re-initialising the classification layer, LOO_empty's attributions change sign more often than IM's: IM is less sensitive to the model.",
    published=TABLE_A5,
    published_note="% of words whose attribution changes sign, and mean absolute change, after the classifier head is re-initialised; higher is better",
    settings={
        "models": {"SST-2": SST2[3], "e-SNLI": ESNLI[3]},
        "data": {"SST-2": "sst2/dev", "e-SNLI": "esnli/dev"},
        "methods": TABLE_A5_METHODS,
        "randomization": {"mode": "independent", "components": ["head"], "seed": 0},
    },
    default_limit=30,
    compute=table_a5,
    check=check_table_a5,
    differences=(
        SMALL_MODEL,
        SMALL_MLM,
        SLICE,
        "one random head (seed 0), the paper's number of re-initialisations is not stated",
    ),
)
