"""Reproductions of Pham, Bui, Mai & Nguyen 2022, "Double Trouble: How to not Explain a Text
Classifier's Decisions Using Counterfactuals Synthesized by Masked Language Models?" (arXiv
2110.11929; our paper 000), which re-examines Input Marginalization (Kim et al. 2020, arXiv
2010.13984). Published values are copied from ``shared/research/seeds-000-001.md`` (A.4).

Every number is computed by the engine: attributions and faithfulness through
``engine.evaluate.evaluate_slice`` / ``score_attribution`` (Deletion and Deletion_BERT under
``convention="paper000"``), agreement with human highlights through ``plausibility_report``
(paper 000's best threshold, correctly predicted examples only), the classifier-head reset
through ``experiments.randomization.run_randomization``, masked-LM fill-ins through
``core.masked_lm.MaskedLM.fill_words`` and Deletion_BERT's replacement rule
(``metrics.faithfulness``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.types import ProgressFn
from engine.reproduce.base import Finding, Paper, Reproduction, Resources, Row, best, examples, value
from metrics.base import Summary

PAPER = Paper("Pham, Bui, Mai & Nguyen", 2022, "Double Trouble", "2110.11929")
SST2 = ("SST-2", "sst2", "dev", "minilm-sst2")
ESNLI = ("e-SNLI", "esnli", "dev", "minilm-esnli")
ESNLI_HIGHLIGHTED = ("e-SNLI", "esnli", "dev_highlighted", "minilm-esnli")
# Paper 000's LOO_zero replaces the word by [PAD] (its Sec. 4): our loo_pad.
TABLE1_METHODS = {"IM": "im", "LOO_zero": "loo_pad", "LOO_unk": "loo_unk", "LOO_empty": "loo_empty"}
SMALL_MODEL = "our classifiers are LoRA-tuned all-MiniLM-L6-v2 (6 layers, 22M parameters), not BERT-base"
SMALL_MLM = "our masked LM is minilm-mlm (38% masked-word accuracy), not pre-trained BERT-base"
SLICE = "a dev slice (the first N examples), not all dev examples"


def _progress(progress: ProgressFn | None, start: float, width: float):
    if progress is None:
        return None
    return lambda fraction, message: progress(start + width * fraction, message)


# --------------------------------------------------------------------------- Table 1

TABLE1 = {
    ("SST-2", "Deletion"): (0.4732, 0.4374, 0.4464, 0.4241),
    ("SST-2", "Deletion_BERT"): (0.4922, 0.4970, 0.5047, 0.5065),
    ("e-SNLI", "Deletion"): (0.3912, 0.2798, 0.3742, 0.2506),
    ("e-SNLI", "Deletion_BERT"): (0.2816, 0.3240, 0.3636, 0.3328),
}


def table1(resources: Resources, limit: int, progress: ProgressFn | None) -> list[Row]:
    from engine.evaluate import evaluate_slice, metric_params, score_attribution
    from metrics.faithfulness import CurveParams

    deletion = {"removal": "delete", "convention": "paper000"}
    bert = CurveParams(removal="mlm", convention="paper000")
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
            progress=_progress(progress, d / 2, 0.4),
        )
        bert_values = {
            method: [
                score_attribution(clf, r.example, r.attributions[method], {"deletion": bert}, mlm=mlm)["deletion"].value
                for r in evaluation.results
                if method in r.attributions
            ]
            for method in TABLE1_METHODS.values()
        }
        for metric in ("Deletion", "Deletion_BERT"):
            for column, (name, method) in enumerate(TABLE1_METHODS.items()):
                if metric == "Deletion":
                    vals = [r.metrics[method]["deletion"].value for r in evaluation.results if method in r.metrics]
                else:
                    vals = bert_values[method]
                rows.append(
                    Row.of(
                        f"{label} · {metric} · {name}",
                        (label, metric, name),
                        TABLE1[(label, metric)][column],
                        Summary.of(vals),
                    )
                )
    return rows


def check_table1(rows: Sequence[Row]) -> Finding:
    """The paper: the best (lowest-AUC) method under Deletion is not the best under Deletion_BERT
    (LOO_empty wins Deletion, IM wins Deletion_BERT)."""
    parts, flips = [], []
    for dataset in sorted({row.key[0] for row in rows}):
        plain = best(rows, (dataset, "Deletion"), lower=True)
        bert = best(rows, (dataset, "Deletion_BERT"), lower=True)
        if plain is None or bert is None:
            return Finding(False, f"{dataset}: a metric has no scored rows")
        flips.append(plain[0] != bert[0])
        parts.append(f"{dataset}: best under Deletion {plain[0]}, under Deletion_BERT {bert[0]}")
    holds = bool(flips) and all(flips)
    verdict = "the best method flips" if holds else "the best method does not flip on every dataset"
    return Finding(holds, f"{verdict} ({'; '.join(parts)})")


# --------------------------------------------------------------------------- Table 3

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
    from engine.slice_report import correct_only, plausibility_report

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
    report = plausibility_report(correct_only(evaluation), params, objective="iou")
    rows = []
    for name, method in TABLE3_METHODS.items():
        at_best = report.at_best.get(method, {}) if report else {}
        tau = report.thresholds[method].best if report and method in report.thresholds else None
        for key in THRESHOLD_KEYS:
            summary = at_best.get(key, Summary.of([]))
            shown = f"{label} L2 · {key} · {name}" + (f" (tau {tau:.2f})" if tau is not None else "")
            rows.append(Row.of(shown, (key, name), TABLE3[name].get(key), summary))
    return rows


def check_table3(rows: Sequence[Row]) -> Finding:
    """The paper: IM is no better than LOO_empty at agreeing with human highlights (LOO_empty's
    IoU and F1 are at least IM's on e-SNLI L2)."""
    parts, holds = [], True
    for key in ("iou", "f1"):
        im, loo = value(rows, key, "IM"), value(rows, key, "LOO_empty")
        if im is None or loo is None:
            return Finding(False, f"{key}: IM or LOO_empty has no scored examples")
        holds &= loo >= im
        parts.append(f"{key} LOO_empty {loo:.3f} vs IM {im:.3f}")
    lime, lime_bert = value(rows, "f1", "LIME"), value(rows, "f1", "LIME_BERT")
    if lime is not None and lime_bert is not None:
        parts.append(
            f"F1 LIME {lime:.3f} vs LIME_BERT {lime_bert:.3f} (the paper: LIME_BERT slightly below LIME, on SST)"
        )
    verdict = "IM is no better than LOO_empty" if holds else "IM beats LOO_empty"
    return Finding(holds, f"{verdict} ({'; '.join(parts)})")


# --------------------------------------------------------------------------- Table 4

TABLE4 = {"SST-2": (3.52, 2.20, 16.38), "e-SNLI": (4.92, 4.86, 25.74)}
TABLE4_ROWS = ("one word deleted", "one word replaced by the masked LM", "half the words deleted at random")
HALF_DRAWS = 10


def accuracy_drops(clf, mlm, example, rng: np.random.Generator) -> tuple[float, float, float]:
    """Percentage points of accuracy lost on one example: its correctness (0 or 1) minus the mean
    correctness over its variants with (a) one word deleted, (b) one word replaced by Deletion_BERT's
    fill-in under paper 000's rule, (c) half the words (rounded down, at least one) deleted at
    random, ``HALF_DRAWS`` draws."""
    from explainers.loo import removal_variant
    from metrics.faithfulness import PAPER000_FILL_CANDIDATES, _Remover

    example = clf.fit_example(example)[0]
    encoded = clf.encode(example)
    n = encoded.n_words
    remover = _Remover(clf, example, encoded, "mlm", mlm, PAPER000_FILL_CANDIDATES)
    deleted = [removal_variant(clf, encoded, [i], "delete") for i in range(n)]
    replaced = [remover.apply((i,), [i])[0] for i in range(n)]
    half = [
        removal_variant(clf, encoded, sorted(int(i) for i in rng.choice(n, max(1, n // 2), replace=False)), "delete")
        for _ in range(HALF_DRAWS)
    ]
    predicted = clf.predict_proba([encoded.variant, *deleted, *replaced, *half]).argmax(axis=1)
    correct = (predicted == example.label).astype(np.float64)
    base = correct[0]
    parts = (correct[1 : 1 + n], correct[1 + n : 1 + 2 * n], correct[1 + 2 * n :])
    return tuple(100.0 * (base - part.mean()) for part in parts)


def table4(resources: Resources, limit: int, progress: ProgressFn | None) -> list[Row]:
    rows = []
    for d, (label, dataset, split, model) in enumerate((SST2, ESNLI)):
        clf, mlm = resources.classifier(model), resources.mlm()
        rng = np.random.default_rng(0)
        chosen = examples(dataset, split, limit)
        drops = []
        for i, example in enumerate(chosen):
            if progress is not None:
                progress((d + i / len(chosen)) / 2, f"{label}: example {i + 1} of {len(chosen)}")
            drops.append(accuracy_drops(clf, mlm, example, rng))
        for column, name in enumerate(TABLE4_ROWS):
            summary = Summary.of([drop[column] for drop in drops])
            rows.append(Row.of(f"{label} · {name}", (label, name), TABLE4[label][column], summary))
    return rows


def check_table4(rows: Sequence[Row]) -> Finding:
    """The paper: one word deleted or replaced barely moves accuracy (1-5 points), half the words
    deleted at random moves it several times more (16-26 points). Holds when each single-word
    drop is below half the random-half drop on every dataset."""
    parts, holds = [], True
    for dataset in sorted({row.key[0] for row in rows}):
        one, replaced, half = (value(rows, dataset, name) for name in TABLE4_ROWS)
        if one is None or replaced is None or half is None:
            return Finding(False, f"{dataset}: a row has no scored examples")
        holds &= max(one, replaced) < 0.5 * half
        parts.append(f"{dataset}: {one:.2f} and {replaced:.2f} points vs {half:.2f} for half the words")
    verdict = "single-word changes cost under half" if holds else "single-word changes cost at least half"
    return Finding(holds, f"{verdict} of deleting half the words ({'; '.join(parts)})")


# --------------------------------------------------------------------------- Table A3

TABLE_A3: dict[str, dict[str, float | None]] = {
    "SST-2": {"exact_all": 48.94, "exact_human": None, "likelihood": 0.8229, "top10_mass": 81.0},
    "e-SNLI": {"exact_all": 59.43, "exact_human": 42.74, "likelihood": 0.8146, "top10_mass": 90.0},
}
TABLE_A3_ROWS = {
    "exact_all": "% top-1 exact match, all words",
    "exact_human": "% top-1 exact match, human-highlighted words",
    "likelihood": "top-1 likelihood where it is an exact match",
    "top10_mass": "% probability mass of the top 10 (Sec. 4)",
}


def fill_statistics(mlm, example) -> dict[str, float | None]:
    """One example's masked-LM statistics, each word masked alone (as IM does): the share of words
    whose top-1 fill-in is the word (uncased; in %), the same over the majority human highlight,
    the mean top-1 likelihood over the exact matches, the mean top-10 mass (in %)."""
    fills = mlm.fill_words(example.segments, list(range(len(example.words))), k=10)
    exact = np.array(
        [
            mlm.token_text(top[0].token).lower() == word.lower()
            for (top, _), word in zip(fills, example.words, strict=True)
        ]
    )
    likelihood = np.array([top[0].probability for top, _ in fills])
    mass = np.array([sum(f.probability for f in top) for top, _ in fills])
    human = np.asarray(example.rationale, dtype=bool) if example.rationale is not None else None
    return {
        "exact_all": 100.0 * float(exact.mean()),
        "exact_human": 100.0 * float(exact[human].mean()) if human is not None and human.any() else None,
        "likelihood": float(likelihood[exact].mean()) if exact.any() else None,
        "top10_mass": 100.0 * float(mass.mean()),
    }


def table_a3(resources: Resources, limit: int, progress: ProgressFn | None) -> list[Row]:
    rows = []
    mlm = resources.mlm()
    for d, (label, dataset, split, _) in enumerate((SST2, ESNLI_HIGHLIGHTED)):
        chosen = examples(dataset, split, limit)
        if progress is not None:
            progress(d / 2, f"{label}: {len(chosen)} examples")
        stats = [fill_statistics(mlm, example) for example in chosen]
        for key, name in TABLE_A3_ROWS.items():
            if key == "exact_human" and dataset == "sst2":
                continue  # our SST-2 carries no human highlights
            summary = Summary.of([s[key] for s in stats])
            rows.append(Row.of(f"{label} · {name}", (label, key), TABLE_A3[label][key], summary))
    return rows


def check_table_a3(rows: Sequence[Row]) -> Finding:
    """The paper: the masked LM restores the original word about half the time, with mean
    likelihood about 0.8, which bounds IM's attribution of those words near zero. Holds when, on
    every dataset, at least a quarter of the words are restored exactly (half the paper's lowest
    rate) with a mean likelihood of at least 0.5."""
    parts, holds = [], True
    for dataset in sorted({row.key[0] for row in rows}):
        rate, likelihood = value(rows, dataset, "exact_all"), value(rows, dataset, "likelihood")
        if rate is None or likelihood is None:
            return Finding(False, f"{dataset}: no exact matches to measure")
        holds &= rate >= 25.0 and likelihood >= 0.5
        parts.append(f"{dataset}: {rate:.1f}% exact, likelihood {likelihood:.2f}")
    verdict = "the masked LM often restores the word" if holds else "the masked LM restores the word too rarely"
    return Finding(holds, f"{verdict} (needs >= 25% and >= 0.5; {'; '.join(parts)})")


# --------------------------------------------------------------------------- Table A5

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
            progress=_progress(progress, d / 2, 0.5),
        )
        step = [s.name for s in result.steps].index(HEAD)
        for measure, scale, unit in (
            ("sign_change", 100.0, "% words changing sign"),
            ("mean_abs_change", 1.0, "mean |change|"),
        ):
            for name, method in TABLE_A5_METHODS.items():
                vals = [getattr(e.similarities[step][method], measure) for e in result.examples]
                rows.append(
                    Row.of(
                        f"{label} · {unit} · {name}",
                        (label, measure, name),
                        TABLE_A5[(label, measure, name)],
                        Summary.of(vals),
                        scale,
                    )
                )
    return rows


def check_table_a5(rows: Sequence[Row]) -> Finding:
    """The paper: after the classification layer is re-initialised, more words change sign under
    LOO_empty than under IM (IM is less sensitive to the model), on every dataset."""
    parts, holds = [], True
    for dataset in sorted({row.key[0] for row in rows}):
        loo, im = value(rows, dataset, "sign_change", "LOO_empty"), value(rows, dataset, "sign_change", "IM")
        if loo is None or im is None:
            return Finding(False, f"{dataset}: no scored examples")
        holds &= loo > im
        parts.append(f"{dataset}: LOO_empty {loo:.1f}% vs IM {im:.1f}%")
    verdict = "LOO_empty changes sign more often than IM" if holds else "IM changes sign as often as LOO_empty or more"
    return Finding(holds, f"{verdict} ({'; '.join(parts)})")


# --------------------------------------------------------------------------- registry entries

REPRODUCTIONS = (
    Reproduction(
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
                "Deletion": {"removal": "delete", "fraction": 0.2, "convention": "paper000"},
                "Deletion_BERT": {"removal": "mlm", "fraction": 0.2, "convention": "paper000"},
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
            "LOO_zero is our loo_pad ([PAD] in place of the word, paper 000 Sec. 4)",
        ),
    ),
    Reproduction(
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
            "threshold": "paper 000's best tau over 0.05..0.95 by mean IoU, per method",
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
    ),
    Reproduction(
        name="double-trouble-table4",
        paper=PAPER,
        table="Table 4",
        claim="Deleting or replacing one word barely changes accuracy (1-5 points), deleting half the words at random changes it several times more.",
        published=TABLE4,
        published_note="drop in dev accuracy, percentage points",
        settings={
            "models": {"SST-2": SST2[3], "e-SNLI": ESNLI[3]},
            "data": {"SST-2": "sst2/dev", "e-SNLI": "esnli/dev"},
            "replacement": "the highest-ranked of the masked LM's top 2 that differs from the word (Deletion_BERT's rule)",
            "half": f"floor(n/2) words (at least 1) deleted at random, {HALF_DRAWS} draws per example, seed 0",
        },
        default_limit=100,
        compute=table4,
        check=check_table4,
        differences=(
            SMALL_MODEL,
            SMALL_MLM,
            SLICE,
            "the drop is averaged per example (each example's variants weigh equally), the paper pools all variants",
            "the paper's 'many tokens deleted' row uses LIME's samples, ours deletes exactly half",
        ),
    ),
    Reproduction(
        name="double-trouble-tableA3",
        paper=PAPER,
        table="Table A3",
        claim="The masked LM's top-1 fill-in is the original word about half the time, with a mean likelihood of about 0.82, so IM's attribution of those words is bounded near zero.",
        published=TABLE_A3,
        published_note="% of words whose BERT top-1 is the word (uncased), over all words and over human highlights; mean top-1 likelihood of the exact matches; top-10 mass from Sec. 4",
        settings={"masked_lm": "minilm-mlm", "data": {"SST-2": "sst2/dev", "e-SNLI": "esnli/dev_highlighted"}, "k": 10},
        default_limit=300,
        compute=table_a3,
        check=check_table_a3,
        differences=(
            SMALL_MLM,
            SLICE,
            "a word that is several word pieces cannot be an exact match for one mask token",
        ),
    ),
    Reproduction(
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
    ),
)
