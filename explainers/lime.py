"""LIME over words (Ribeiro et al. 2016) and LIME with masked-LM fill-ins (Pham et al. 2022,
LIME_BERT).

The sampler is the one of the ``lime`` package's ``LimeTextExplainer``: the first sample is the
original input; every other sample removes a number of words drawn uniformly from 1..n, chosen
without replacement. Features are word positions (lime's ``bow=False``) and every word gets a
weight (no feature selection). The surrogate is lime's: a ridge regression (alpha 1, with an
intercept) of the target-class probability on the 0/1 "word kept" vectors, each sample weighted
by ``sqrt(exp(-d^2 / 25^2))`` where ``d`` is 100 times its cosine distance to the original.
The word scores are the surrogate's coefficients.

``lime``: removed words are deleted (or replaced by [MASK]/[UNK]/[PAD], or zeroed).
``lime_mlm``: removed words are replaced by the masked LM's top-1 fill-in, all masks filled in
one pass (``all_at_once``) or left to right, each fill conditioned on the previous ones
(``one_at_a_time``); Pham et al. 2022 report that both give similar results.
A sentence pair is explained in one run by default (``pairs="joint"``: the words of both texts
sampled together, one kernel distance over all of them); ``pairs="separate"`` explains each text
in its own run of ``n_samples`` with the other held whole, as Pham et al. 2022's code does.
All samples are drawn from a local generator before anything is scored, and all are scored in
one scorer call, so the scores do not depend on the batch size; ``lime`` pools several examples'
samples in that call in a dataset run (explainers/pooling.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.classifier import Classifier, ProgressFn
from core.masked_lm import Fill, MaskedLM
from core.params import param, seed_param
from core.perturb import REMOVALS, removal_variant, replaced_segments, sample_text
from core.types import Attribution, Example
from explainers.base import Passes, make_attribution, one_example
from explainers.input_marginalization import fill_converter
from explainers.pooling import Scoring, pooled

FILLS = ("all_at_once", "one_at_a_time")
PAIRS = ("joint", "separate")
_PAIRS_HELP = "a sentence pair's texts sampled together (joint) or each in its own run, the other kept (separate)"
GALLERY_SIZE = 50  # perturbed samples kept in the extras for display


@dataclass(frozen=True)
class LimeParams:
    n_samples: int = param(
        1000, "perturbed inputs, the original included (Pham et al. 2022: 1,000)", min=2, max=100_000
    )
    removal: str = param("delete", "how a removed word is removed", choices=REMOVALS)
    kernel_width: float = param(25.0, "kernel width on 100 x cosine distance (lime's default)", min=1e-3, max=1e4)
    alpha: float = param(1.0, "ridge penalty of the linear surrogate (lime's default)", min=0.0, max=1e6)
    pairs: str = param("joint", _PAIRS_HELP, choices=PAIRS)
    seed: int = seed_param()


@dataclass(frozen=True)
class LimeMlmParams:
    n_samples: int = param(
        1000, "perturbed inputs, the original included (Pham et al. 2022: 1,000)", min=2, max=100_000
    )
    fill: str = param("all_at_once", "fill every removed word in one masked-LM pass or one at a time", choices=FILLS)
    kernel_width: float = param(25.0, "kernel width on 100 x cosine distance (lime's default)", min=1e-3, max=1e4)
    alpha: float = param(1.0, "ridge penalty of the linear surrogate (lime's default)", min=0.0, max=1e6)
    pairs: str = param("joint", _PAIRS_HELP, choices=PAIRS)
    seed: int = seed_param()


@dataclass(frozen=True)
class Surrogate:
    coef: np.ndarray  # (n_features,)
    intercept: float
    r2: float  # weighted coefficient of determination on the samples


def draw_kept(n_words: int, n_samples: int, rng: np.random.Generator) -> np.ndarray:
    """lime's text sampler: (n_samples, n_words) booleans, True where the word is kept; row 0 keeps
    all."""
    kept = np.ones((n_samples, n_words), dtype=bool)
    sizes = rng.integers(1, n_words + 1, n_samples - 1)
    for row, size in enumerate(sizes, start=1):
        kept[row, rng.choice(n_words, size, replace=False)] = False
    return kept


def draw_runs(example: Example, n_samples: int, pairs: str, rng: np.random.Generator) -> list[tuple[slice, np.ndarray]]:
    """The samples of each LIME run as (the words it explains, (n_samples, n_words) kept rows): one
    run over every word, or with ``pairs="separate"`` one per text of a pair, the other text kept
    whole in its rows."""
    n_words = len(example.words)
    if pairs == "joint" or not example.is_pair:
        return [(slice(0, n_words), draw_kept(n_words, n_samples, rng))]
    runs, start = [], 0
    for segment in example.segments:
        kept = np.ones((n_samples, n_words), dtype=bool)
        kept[:, start : start + len(segment)] = draw_kept(len(segment), n_samples, rng)
        runs.append((slice(start, start + len(segment)), kept))
        start += len(segment)
    return runs


def kernel_weights(kept: np.ndarray, kernel_width: float) -> np.ndarray:
    """lime's exponential kernel on 100 x the cosine distance between each 0/1 row and all-ones
    (``1 - sqrt(kept share)``; 1 for an empty row)."""
    distance = 100.0 * (1.0 - np.sqrt(kept.sum(axis=1) / kept.shape[1]))
    return np.sqrt(np.exp(-(distance**2) / kernel_width**2))


def fit_ridge(features: np.ndarray, targets: np.ndarray, weights: np.ndarray, alpha: float) -> Surrogate:
    """Weighted ridge regression with an unpenalised intercept (sklearn's ``Ridge(alpha)`` with
    sample weights, lime's default surrogate)."""
    total = weights.sum()
    x_mean = weights @ features / total
    y_mean = float(weights @ targets / total)
    centred_x = features - x_mean
    centred_y = targets - y_mean
    gram = centred_x.T @ (weights[:, None] * centred_x) + alpha * np.eye(features.shape[1])
    coef = np.linalg.lstsq(gram, centred_x.T @ (weights * centred_y), rcond=None)[0]
    intercept = y_mean - float(x_mean @ coef)
    residual = targets - features @ coef - intercept
    explained, total_variance = float(weights @ residual**2), float(weights @ centred_y**2)
    r2 = 1.0 - explained / total_variance if total_variance > 0 else float(explained == 0)
    return Surrogate(coef, intercept, r2)


def _removed_text(clf: Classifier, removal: str) -> str | None:
    if removal == "delete":
        return None
    if removal == "zero":
        return "∅"
    return {"mask": clf.tokenizer.mask_token, "unk": clf.tokenizer.unk_token, "pad": clf.tokenizer.pad_token}[removal]


def _stage(progress: ProgressFn | None, start: float, end: float) -> ProgressFn:
    def report(fraction: float, message: str) -> None:
        if progress is not None:
            progress(start + (end - start) * fraction, message)

    return report


def _attribution(
    example: Example,
    target: int,
    runs: list[tuple[slice, np.ndarray]],
    probabilities: np.ndarray,
    texts: list[str],
    kernel_width: float,
    alpha: float,
) -> Attribution:
    """Fit each run's surrogate on its scored samples (the runs' rows one after the other, each
    run over its own words) and keep the diagnostics and the first samples; with several runs the
    intercept and local prediction are each run's and R² the lowest."""
    values = probabilities[:, target]
    surrogates, all_weights, start = [], [], 0
    for words, kept in runs:
        weights = kernel_weights(kept[:, words], kernel_width)
        surrogates.append(
            fit_ridge(kept[:, words].astype(np.float64), values[start : start + len(kept)], weights, alpha)
        )
        all_weights.append(weights)
        start += len(kept)
    kept, weights = np.concatenate([k for _, k in runs]), np.concatenate(all_weights)
    gallery = [
        {
            "text": text,
            "kept": int(row.sum()),
            "probability": float(v),
            "predicted": int(np.argmax(p)),
            "probabilities": [float(x) for x in p],
            "weight": float(w),
        }
        for text, row, v, p, w in zip(texts[:GALLERY_SIZE], kept, values, probabilities, weights)
    ]
    intercepts = [s.intercept for s in surrogates]
    local = [s.intercept + float(s.coef.sum()) for s in surrogates]
    removed = [1.0 - float(k[1:, words].mean()) for words, k in runs if len(k) > 1]
    extras = {
        "original_probability": float(values[0]),
        "intercept": intercepts[0] if len(runs) == 1 else intercepts,
        "r2": min(s.r2 for s in surrogates),
        "local_prediction": local[0] if len(runs) == 1 else local,
        "mean_removed_share": float(np.mean(removed)) if removed else 0.0,
        "samples": gallery,
    }
    return make_attribution(example, target, np.concatenate([s.coef for s in surrogates]), extras=extras)


def plan(clf: Classifier, example: Example, target: int, params: LimeParams) -> Scoring:
    encoded = clf.encode(example)
    runs = draw_runs(example, params.n_samples, params.pairs, np.random.default_rng(params.seed))
    removed = [np.flatnonzero(~row).tolist() for _, kept in runs for row in kept]
    variants = [removal_variant(clf, encoded, words, params.removal) for words in removed]
    marker = _removed_text(clf, params.removal)
    texts = [sample_text(replaced_segments(example, dict.fromkeys(words, marker))) for words in removed[:GALLERY_SIZE]]

    def finish(probabilities: np.ndarray) -> Attribution:
        return _attribution(example, target, runs, probabilities, texts, params.kernel_width, params.alpha)

    return Scoring(variants, finish)


explain_batch = pooled(plan)
explain = one_example(explain_batch)


def _fill_unique(mlm: MaskedLM, rows: list[tuple[tuple[str, ...], ...]]) -> list[list[Fill]]:
    """``mlm.fill_masks`` on each distinct row once."""
    distinct = list(dict.fromkeys(rows))
    filled = dict(zip(distinct, mlm.fill_masks(distinct)))
    return [filled[row] for row in rows]


def fill_removed(
    mlm: MaskedLM, example: Example, kept: np.ndarray, fill: str, progress: ProgressFn | None = None
) -> list[dict[int, Fill]]:
    """For each sample, the masked LM's top-1 fill-in of each removed word."""
    if progress is not None:
        progress(0.0, "masked LM fill-ins")
    mask = mlm.tokenizer.mask_token
    removed = [np.flatnonzero(~row).tolist() for row in kept]
    fills: list[dict[int, Fill]] = [{} for _ in removed]
    if fill == "all_at_once":
        todo = [s for s, words in enumerate(removed) if words]
        rows = [replaced_segments(example, dict.fromkeys(removed[s], mask)) for s in todo]
        for s, row_fills in zip(todo, _fill_unique(mlm, rows)):
            fills[s] = dict(zip(removed[s], row_fills))
        return fills
    steps = max(len(words) for words in removed)
    for step in range(steps):
        if progress is not None:
            progress(step / steps, f"masked LM fill-ins, word {step + 1} of at most {steps}")
        todo = [s for s, words in enumerate(removed) if len(words) > step]
        rows = [
            replaced_segments(
                example,
                {**{i: mlm.token_text(f.token) for i, f in fills[s].items()}, **dict.fromkeys(removed[s][step:], mask)},
            )
            for s in todo
        ]
        for s, row_fills in zip(todo, _fill_unique(mlm, rows)):
            fills[s][removed[s][step]] = row_fills[0]
    return fills


def explain_mlm(
    clf: Classifier,
    example: Example,
    target: int,
    params: LimeMlmParams,
    *,
    mlm: MaskedLM,
    progress: ProgressFn | None = None,
) -> Attribution:
    encoded = clf.encode(example)
    runs = draw_runs(example, params.n_samples, params.pairs, np.random.default_rng(params.seed))
    fills = fill_removed(mlm, example, np.concatenate([k for _, k in runs]), params.fill, _stage(progress, 0.0, 0.5))
    to_ids = fill_converter(clf, mlm)
    variants = [encoded.perturb({i: to_ids(f) for i, f in row.items()}) for row in fills]
    texts = [
        sample_text(replaced_segments(example, {i: mlm.token_text(f.token) for i, f in row.items()}))
        for row in fills[:GALLERY_SIZE]
    ]
    probabilities = clf.predict_proba(variants, progress=_stage(progress, 0.5, 1.0))
    return _attribution(example, target, runs, probabilities, texts, params.kernel_width, params.alpha)


def _runs(params: LimeParams | LimeMlmParams) -> int:
    """Runs of ``n_samples`` at most: two for ``pairs="separate"`` (a pair's texts; a single text
    is one run, so the cost models below are bounds for it)."""
    return 2 if params.pairs == "separate" else 1


def passes(n_words: int, params: LimeParams) -> Passes:
    """Cost model of ``lime``: one classifier pass per sample (the original included)."""
    return Passes(classifier=params.n_samples * _runs(params))


def passes_mlm(n_words: int, params: LimeMlmParams) -> Passes:
    """Cost model of ``lime_mlm``: a sample removes 1..n words (mean (n + 1) / 2), filled in one
    masked-LM pass or one pass per removed word."""
    per_sample = 1.0 if params.fill == "all_at_once" else (n_words + 1) / 2
    runs = _runs(params)
    return Passes(classifier=params.n_samples * runs, mlm=round((params.n_samples - 1) * per_sample) * runs)
