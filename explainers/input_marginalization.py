"""Input Marginalization (Kim et al. 2020; as examined in Pham et al. 2022, "Double Trouble",
Eq. 3-4).

Each word alone is replaced by one mask token; the masked LM proposes fill-ins ``x~_j`` with
likelihoods ``p_j``; the expected prediction is the likelihood-weighted average of the
classifier's target probability with each fill-in in place,
``E_i = sum_j p_j f(x_-i, x~_j) / sum_j p_j`` (renormalised over the kept candidates, as the
authors' code does; a parameter), and the attribution is
``a_i = log2-odds(f(x)) - log2-odds(E_i)`` (or ``f(x) - E_i`` in probability space).

Candidates are the top-k fill-ins (Pham et al. 2022: k = 10) or every fill-in with likelihood at
least a threshold (Kim et al.: 1e-5). The original word stays among the candidates unless
excluded. Fill-ins are masked-LM vocabulary tokens: with a shared vocabulary the token id
replaces the word directly, otherwise the token's text is split by the classifier's tokenizer.
Cost: n masked-LM forwards and at most k*n + 1 classifier forwards in one scorer call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from core.classifier import Classifier, ProgressFn
from core.masked_lm import Fill, MaskedLM
from core.params import param
from core.types import Attribution, Example
from explainers.base import Passes, make_attribution
from explainers.loo import OUTPUTS

SELECTIONS = ("topk", "threshold")


@dataclass(frozen=True)
class ImParams:
    k: int = param(10, "fill-ins per word (top-k selection)", min=1, max=1000)
    selection: str = param("topk", "keep the top-k fill-ins or every fill-in above the threshold", choices=SELECTIONS)
    threshold: float = param(1e-5, "least likelihood of a kept fill-in (threshold selection)", min=0.0, max=1.0)
    max_candidates: int = param(2000, "most fill-ins per word under threshold selection", min=1, max=20000)
    renormalize: bool = param(True, "divide the weighted sum by the kept fill-ins' likelihood mass")
    include_original: bool = param(True, "keep the original word among the fill-ins")
    output: str = param("log_odds", "score space: log2-odds difference or probability difference", choices=OUTPUTS)


def fill_converter(clf: Classifier, mlm: MaskedLM) -> Callable[[Fill], tuple[int, ...]]:
    """Maps a fill-in to classifier token ids: its own id when the masked LM and the classifier
    share one vocabulary, else its text split by the classifier's tokenizer."""
    if mlm.tokenizer.get_vocab() == clf.tokenizer.get_vocab():
        return lambda fill: (fill.token_id,)

    @functools.cache
    def split(token: str) -> tuple[int, ...]:
        return clf.word_tokens(mlm.token_text(token))

    return lambda fill: split(fill.token)


def is_original(mlm: MaskedLM, fill: Fill, word: str) -> bool:
    return mlm.token_text(fill.token).lower() == word.lower()


def select_candidates(mlm: MaskedLM, fills: list[Fill], word: str, params: ImParams) -> list[Fill]:
    """The fill-ins IM marginalises over (at least one: threshold selection keeps the most
    likely)."""
    kept = [f for f in fills if params.include_original or not is_original(mlm, f, word)]
    if params.selection == "topk":
        return kept[: params.k]
    return [f for f in kept if f.probability >= params.threshold] or kept[:1]


def _requested(params: ImParams) -> int:
    if params.selection == "threshold":
        return params.max_candidates
    return params.k + (0 if params.include_original else 1)


def _table(
    mlm: MaskedLM, word: str, fills: list[Fill], weights: np.ndarray, probabilities: np.ndarray, target: int
) -> list[dict]:
    """One row per candidate: fill-in, likelihood, weight, target probability with it in place,
    predicted class, every class probability and the weighted contribution to the expectation."""
    return [
        {
            "token": f.token,
            "text": mlm.token_text(f.token),
            "likelihood": f.probability,
            "weight": float(w),
            "probability": float(p[target]),
            "predicted": int(np.argmax(p)),
            "probabilities": [float(x) for x in p],
            "contribution": float(w * p[target]),
            "is_original": is_original(mlm, f, word),
        }
        for f, w, p in zip(fills, weights, probabilities)
    ]


def explain(
    clf: Classifier,
    example: Example,
    target: int,
    params: ImParams,
    *,
    mlm: MaskedLM,
    progress: ProgressFn | None = None,
) -> Attribution:
    encoded = clf.encode(example)
    words = example.words
    if progress is not None:
        progress(0.0, "masked LM fill-ins")
    filled = mlm.fill_words(example.segments, list(range(encoded.n_words)), k=_requested(params))
    to_ids = fill_converter(clf, mlm)
    candidates = [select_candidates(mlm, fills, word, params) for word, (fills, _) in zip(words, filled)]
    for word, fills in zip(words, candidates):
        if not fills:
            raise ValueError(
                f"no fill-in of {word!r} is left once the original word is excluded: raise k or max_candidates"
            )
    variants = [encoded.variant] + [
        encoded.perturb({i: to_ids(f)}) for i, fills in enumerate(candidates) for f in fills
    ]

    def scoring(fraction: float, message: str) -> None:
        if progress is not None:
            progress(0.1 + 0.9 * fraction, message)

    probabilities = clf.predict_proba(variants, progress=scoring)  # (1 + sum of candidates, n_labels)
    original = float(probabilities[0, target])
    rows = np.split(probabilities[1:], np.cumsum([len(c) for c in candidates])[:-1])
    tables, expectations, masses = [], [], []
    for word, fills, row in zip(words, candidates, rows):
        likelihoods = np.array([f.probability for f in fills])
        weights = likelihoods / likelihoods.sum() if params.renormalize else likelihoods
        expectations.append(float(weights @ row[:, target]))
        masses.append(float(likelihoods.sum()))
        tables.append(_table(mlm, word, fills, weights, row, target))
    scores = clf.head.transform(np.array([original]), params.output)[0] - clf.head.transform(
        np.array(expectations), params.output
    )
    extras = {
        "original_probability": original,
        "expectations": expectations,
        "mass": masses,
        "candidates": tables,
        "top1": [mlm.token_text(fills[0].token) for fills, _ in filled],
        "top1_likelihood": [fills[0].probability for fills, _ in filled],
        "top1_is_original": [is_original(mlm, fills[0], w) for (fills, _), w in zip(filled, words)],
        "original_likelihood": [likelihood for _, likelihood in filled],
    }
    if params.selection == "threshold":
        extras["cap_reached"] = [
            len(f) == params.max_candidates and f[-1].probability >= params.threshold for f, _ in filled
        ]
    return make_attribution(example, target, scores, extras=extras)


def passes(n_words: int, params: ImParams) -> Passes:
    """Cost model: one masked-LM pass per word, one classifier pass per kept fill-in plus the
    original."""
    per_word = params.k if params.selection == "topk" else params.max_candidates
    return Passes(classifier=1 + n_words * per_word, mlm=n_words)
