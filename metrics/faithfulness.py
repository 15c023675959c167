"""Faithfulness metrics: take away the words an explanation ranks highest and watch the prediction.

* ``deletion`` (Arras et al. 2017; paper 000, A.2): remove words one at a time in order of
  decreasing attribution, up to ``fraction`` of the words (default 20%, paper 000; 1.0 draws the
  full curve). The curve is the probability of the explained class (``attribution.target``)
  after each step, starting with the original input. Lower area is better.
* ``insertion`` (Arras et al. 2017): start from the input with every word removed and put the
  words back in the same order, up to ``fraction`` of them. Higher area is better.
* ``comprehensiveness`` and ``sufficiency`` (DeYoung et al. 2020, ERASER; seed 002, 2.4): the
  drop ``p(x) - p(x')`` in the explained class's probability when the top-k% words are removed
  (comprehensiveness, higher is better) or are the only ones kept (sufficiency, lower is better),
  averaged over the bins {1, 5, 10, 20, 50}% (ERASER's AOPC, divided by the number of bins; the
  ERASER and AML code divide by |B| + 1, counting an empty 0% bin, which is |B| / (|B| + 1) = 5/6
  of the value here) or over MaRC's 19 bins 5%, 10%, ..., 95% (paper 003, Eq. 10-11).
* ``log_odds`` (Shrikumar et al. 2017, as used by AML, paper 004): ``ln p(x') - ln p(x)`` with
  the top 20% words replaced by [MASK]; lower (more negative) is better.

The explained output is the head's (``core.heads``, through ``Classifier.predict_proba``): the
softmax probability of a class, the sigmoid probability of one label, or a regression head's raw
score, for which the curves and drops measure the change in score (not bounded to [0, 1]) and
``log_odds`` is refused.

Conventions shared by all five:

* Ranking: words are sorted by their signed score, highest first; ties keep word order.
  Sufficiency removes the complement of the top-k words; for the masked-LM mode it removes them
  in the reverse ranking (least important first).
* Rounding: k% of a text of n words is ``min(n, max(1, ceil(k * n)))`` words, so every bin and
  every curve takes away at least one word even on a four-word text (a 1% bin on a 20-word
  SST-2 sentence removes one word, the 50% bin of a 5-word text removes three).
* Area: a curve of L steps (L words removed or inserted, by the rule above) has the points
  ``x_j = j / L``, j = 0..L, so x runs over [0, 1] whatever the text's length and budget, and
  the area is the trapezoid rule over those points: it is the mean probability along the curve
  and lies in [0, 1].
* Removal modes: ``delete`` drops the word's subwords, ``mask`` / ``unk`` / ``pad`` put one
  [MASK] / [UNK] / [PAD] token in place of the word, ``mlm`` puts the masked LM's best fill-in
  that is not the original word (paper 000's Deletion_BERT). Fill-ins are cumulative: each newly
  removed word is masked in the text where the words removed before it already hold their
  fill-ins, and the highest-ranked of the top ten candidates that is a whole word (not a ``##``
  piece or special token) and differs from the original word (ignoring case) is used; when none
  of the ten qualifies, [UNK] is used. The original word is never put back. Each filled word
  costs one masked-LM pass, one after the other: a deletion curve of L steps needs L passes, an
  insertion curve (which starts from the fully filled text) one per word of the text.

Deletion, Deletion_BERT and insertion also take ``convention="paper000"``, which follows paper
000's code (Kim et al. 2020's ``src/evaluation.py``; arXiv 2010.13984 for IM) so that a figure
can be set beside its Table 1: L = ``max(2, ceil((n - 1) * fraction))`` steps (at most n), the
unperturbed input left off the curve, the points at ``x = 1/L, ..., L/L`` (the probability after
1..L words removed), the trapezoid area over them; with ``removal="mlm"`` each word is replaced by
the highest-ranked of the masked LM's top-2 candidates that differs from the original word
(special tokens skipped, [UNK] when neither qualifies), cumulatively; ``correct_only`` skips
examples the model gets wrong (the paper's optional filter). Insertion under this convention puts
1..L words back with the same step rule and grid (the paper defines no insertion; by analogy).
The default (``ours``) is unchanged.

Every variant of every step of every requested metric for one example and attribution goes to
``Classifier.predict_proba`` as one batch (``score_many``), so shared variants (deletion steps and
comprehensiveness bins, the original input) are scored once. ``extras["inputs"]`` holds the
input text at each curve point, with removed words shown as the token that replaced them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.classifier import Classifier, Encoded, Variant
from core.masked_lm import MaskedLM
from core.params import param
from core.perturb import removal_variant
from core.types import Attribution, Example
from metrics.base import MetricResult, MetricSpec, mean_interval

REMOVALS = ("delete", "mask", "unk", "pad", "mlm")
BIN_SETS: dict[str, tuple[float, ...]] = {
    "eraser": (0.01, 0.05, 0.10, 0.20, 0.50),
    "marc": tuple(round(0.05 * i, 2) for i in range(1, 20)),
}
FILL_CANDIDATES = 10
SEGMENT_JOIN = " ‖ "
_REMOVAL_HELP = "how a word is removed: deleted, one [MASK] / [UNK] / [PAD] token, or a masked-LM fill-in (mlm)"
_PAPER_CURVES = "Arras et al. 2017; paper 000 (Deletion, Deletion_BERT)"
_PAPER_ERASER = "DeYoung et al. 2020 (ERASER); paper 003 (MaRC bins)"


CONVENTIONS = ("ours", "paper000")
PAPER000_FILL_CANDIDATES = 2


@dataclass(frozen=True)
class CurveParams:
    removal: str = param("delete", _REMOVAL_HELP, choices=REMOVALS)
    fraction: float = param(0.2, "share of the words removed or inserted; 1.0 draws the full curve", min=0.01, max=1.0)
    convention: str = param(
        "ours",
        "ours: ceil(fraction n) steps from the unperturbed input, x = 0..1; paper000: max(2, ceil((n - 1) fraction))"
        " steps, unperturbed input off the curve, x = 1/L..1, masked-LM fill-in from the top 2 (paper 000's code)",
        choices=CONVENTIONS,
    )
    correct_only: bool = param(False, "skip examples the model predicts wrongly (paper 000's optional filter)")


@dataclass(frozen=True)
class BinParams:
    removal: str = param("delete", _REMOVAL_HELP, choices=REMOVALS)
    bins: str = param(
        "eraser", "eraser: AOPC over {1, 5, 10, 20, 50}%; marc: mean over 5%, 10%, ..., 95%", choices=tuple(BIN_SETS)
    )
    normalization: str = param(
        "bins",
        "divide the summed drops by |B| (the papers' formula) or by |B| + 1 (the ERASER and AML code)",
        choices=("bins", "bins_plus_one"),
    )


@dataclass(frozen=True)
class LogOddsParams:
    removal: str = param("mask", _REMOVAL_HELP, choices=REMOVALS)
    fraction: float = param(0.2, "share of the top words replaced", min=0.01, max=1.0)


def paper000_steps(fraction: float, n_words: int) -> int:
    """Paper 000's number of deletion steps: ``max(2, ceil((n - 1) * fraction))``, at most n."""
    return min(n_words, max(2, math.ceil(round((n_words - 1) * fraction, 9))))


def word_count(fraction: float, n_words: int) -> int:
    """Words in ``fraction`` of a text: ``ceil(fraction * n)``, at least one, at most ``n``."""
    return min(n_words, max(1, math.ceil(round(fraction * n_words, 9))))


def ranking(scores: np.ndarray) -> tuple[int, ...]:
    """Word indices by decreasing signed score; ties keep word order."""
    return tuple(int(i) for i in np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable"))


# --------------------------------------------------------------------------- removing words


class _Remover:
    """The scored variant and the displayed text of one example with some words removed."""

    def __init__(
        self,
        clf: Classifier,
        example: Example,
        encoded: Encoded,
        removal: str,
        mlm: MaskedLM | None,
        candidates: int = FILL_CANDIDATES,
    ) -> None:
        if removal not in REMOVALS:
            raise ValueError(f"removal={removal!r} is not one of {REMOVALS}")
        if removal == "mlm" and mlm is None:
            raise ValueError("removal='mlm' needs a masked language model")
        self.clf = clf
        self.example = example
        self.encoded = encoded
        self.removal = removal
        self.mlm = mlm
        self.candidates = candidates
        self._chains: dict[tuple[int, ...], list[str | None]] = {}
        self._fill_tokens: dict[str, tuple[int, ...]] = {}

    def apply(self, sequence: tuple[int, ...], removed: Sequence[int]) -> tuple[Variant, str]:
        """The input without ``removed``, a subset of ``sequence`` (the removal order that the
        masked-LM fill-ins follow)."""
        if self.removal != "mlm":
            variant = removal_variant(self.clf, self.encoded, list(removed), self.removal)
            token = (
                None
                if self.removal == "delete"
                else self.clf.tokenizer.convert_ids_to_tokens(self.clf.special_tokens[self.removal])
            )
            return variant, self._text({w: token for w in removed})
        position = {w: i for i, w in enumerate(sequence)}
        chain = self._chain(sequence, 1 + max((position[w] for w in removed), default=-1))
        fills = {w: chain[position[w]] for w in removed}
        unk = self.clf.special_tokens["unk"]
        tokens = {w: self._tokens(fill) if fill is not None else (unk,) for w, fill in fills.items()}
        shown = {w: fill if fill is not None else self.clf.tokenizer.unk_token for w, fill in fills.items()}
        return self.encoded.perturb(tokens), self._text(shown)

    def _text(self, replaced: dict[int, str | None]) -> str:
        segments, start = [], 0
        for segment in self.example.segments:
            shown = []
            for i in range(start, start + len(segment)):
                word = replaced[i] if i in replaced else self.example.words[i]
                if word is not None:
                    shown.append(word)
            segments.append(" ".join(shown))
            start += len(segment)
        return SEGMENT_JOIN.join(segments)

    def _tokens(self, fill: str) -> tuple[int, ...]:
        if fill not in self._fill_tokens:
            self._fill_tokens[fill] = self.clf.word_tokens(fill)
        return self._fill_tokens[fill]

    def _chain(self, sequence: tuple[int, ...], length: int) -> list[str | None]:
        """Cumulative fill-ins for the first ``length`` words of ``sequence`` (None: none found)."""
        chain = self._chains.setdefault(sequence, [])
        words = list(self.example.words)
        for w, fill in zip(sequence, chain):
            words[w] = fill if fill is not None else self.mlm.tokenizer.unk_token
        while len(chain) < length:
            w = sequence[len(chain)]
            fill = self._fill(words, w)
            chain.append(fill)
            words[w] = fill if fill is not None else self.mlm.tokenizer.unk_token
        return chain

    def _fill(self, words: list[str], position: int) -> str | None:
        split = len(self.example.segments[0])
        segments = [words[:split], words[split:]] if self.example.is_pair else [words]
        ((fills, _),) = self.mlm.fill_words(segments, [position], k=self.candidates)
        original = self.example.words[position].lower()
        special = set(self.mlm.tokenizer.all_special_ids)
        for fill in fills:
            text = self.mlm.token_text(fill.token)
            if fill.token_id in special or fill.token.startswith("##") or not text or text.lower() == original:
                continue
            if self._tokens(text):
                return text
        return None


class _Context:
    """What the metrics of one example and attribution share: the encoding, the ranking and the
    removers (with their masked-LM fill-in chains)."""

    def __init__(self, clf: Classifier, example: Example, attribution: Attribution, mlm: MaskedLM | None) -> None:
        if len(attribution.scores) != len(example.words):
            raise ValueError(f"{attribution.method}: {len(attribution.scores)} scores for {len(example.words)} words")
        self.clf = clf
        self.example = example
        self.encoded = clf.encode(example)
        self.n_words = len(example.words)
        self.descending = ranking(attribution.scores)
        self.ascending = self.descending[::-1]
        self.mlm = mlm
        self._removers: dict[tuple[str, int], _Remover] = {}
        self._predicted: int | None = None

    def remover(self, removal: str, candidates: int = FILL_CANDIDATES) -> _Remover:
        key = (removal, candidates)
        if key not in self._removers:
            self._removers[key] = _Remover(self.clf, self.example, self.encoded, removal, self.mlm, candidates)
        return self._removers[key]

    def predicted(self) -> int:
        """The model's class for the unperturbed input (one extra pass, asked for only when needed)."""
        if self._predicted is None:
            self._predicted = self.clf.head.predicted(self.clf.predict_proba([self.encoded.variant])[0])
        return self._predicted


@dataclass(frozen=True)
class _Plan:
    """The variants one metric needs and how to turn their target probabilities into a result."""

    variants: list[Variant]
    finish: Callable[[np.ndarray], MetricResult]


# --------------------------------------------------------------------------- curves


def _curve_plan(ctx: _Context, params: CurveParams, insertion: bool) -> _Plan:
    paper = params.convention == "paper000"
    if paper and params.correct_only and ctx.example.label is not None and ctx.predicted() != ctx.example.label:
        return _Plan([], lambda probs: MetricResult(float("nan"), extras={"skipped": "predicted wrongly"}))
    steps = paper000_steps(params.fraction, ctx.n_words) if paper else word_count(params.fraction, ctx.n_words)
    first = 1 if paper else 0  # paper 000 leaves the unperturbed input off the curve
    order = ctx.descending
    remover = ctx.remover(params.removal, PAPER000_FILL_CANDIDATES if paper else FILL_CANDIDATES)
    removed_sets = [order[j:] if insertion else order[:j] for j in range(first, steps + 1)]
    built = [remover.apply(order, removed) for removed in removed_sets]

    def finish(probs: np.ndarray) -> MetricResult:
        # probs[0] is the original input, probs[1:] the curve.
        curve = probs[1:]
        x = np.arange(first, steps + 1) / steps
        extras = {
            "removal": params.removal,
            "convention": params.convention,
            "n_steps": steps,
            "order": list(order[:steps]),
            "inputs": [text for _, text in built],
            "fraction_removed": [len(r) / ctx.n_words for r in removed_sets],
            "original_probability": float(probs[0]),
        }
        return MetricResult(float(np.trapezoid(curve, x)), tuple(zip(x.tolist(), curve.tolist())), extras)

    return _Plan([ctx.encoded.variant] + [variant for variant, _ in built], finish)


def _deletion_plan(ctx: _Context, params: CurveParams) -> _Plan:
    return _curve_plan(ctx, params, insertion=False)


def _insertion_plan(ctx: _Context, params: CurveParams) -> _Plan:
    return _curve_plan(ctx, params, insertion=True)


# --------------------------------------------------------------------------- bins


def _bins_plan(ctx: _Context, params: BinParams, keep: bool) -> _Plan:
    fractions = BIN_SETS[params.bins]
    counts = [word_count(b, ctx.n_words) for b in fractions]
    remover = ctx.remover(params.removal)
    if keep:
        removed_sets = [ctx.ascending[: ctx.n_words - k] for k in counts]
        built = [remover.apply(ctx.ascending, removed) for removed in removed_sets]
    else:
        removed_sets = [ctx.descending[:k] for k in counts]
        built = [remover.apply(ctx.descending, removed) for removed in removed_sets]
    variants = [ctx.encoded.variant] + [variant for variant, _ in built]

    def finish(probs: np.ndarray) -> MetricResult:
        drops = probs[0] - probs[1:]
        extras = {
            "removal": params.removal,
            "bins": params.bins,
            "counts": counts,
            "inputs": [text for _, text in built],
            "probabilities": probs[1:].tolist(),
            "original_probability": float(probs[0]),
        }
        divisor = len(drops) + (1 if params.normalization == "bins_plus_one" else 0)
        return MetricResult(float(drops.sum() / divisor), tuple(zip(fractions, drops.tolist())), extras)

    return _Plan(variants, finish)


def _comprehensiveness_plan(ctx: _Context, params: BinParams) -> _Plan:
    return _bins_plan(ctx, params, keep=False)


def _sufficiency_plan(ctx: _Context, params: BinParams) -> _Plan:
    return _bins_plan(ctx, params, keep=True)


def _log_odds_plan(ctx: _Context, params: LogOddsParams) -> _Plan:
    check_head(ctx.clf, ["log_odds"])
    count = word_count(params.fraction, ctx.n_words)
    variant, text = ctx.remover(params.removal).apply(ctx.descending, ctx.descending[:count])

    def finish(probs: np.ndarray) -> MetricResult:
        logs = np.log(np.clip(probs, 1e-12, 1.0))
        extras = {"removal": params.removal, "count": count, "inputs": [text], "probabilities": probs.tolist()}
        return MetricResult(float(logs[1] - logs[0]), (), extras)

    return _Plan([ctx.encoded.variant, variant], finish)


_PLANNERS: dict[str, Callable[[_Context, Any], _Plan]] = {
    "deletion": _deletion_plan,
    "insertion": _insertion_plan,
    "comprehensiveness": _comprehensiveness_plan,
    "sufficiency": _sufficiency_plan,
    "log_odds": _log_odds_plan,
}


# --------------------------------------------------------------------------- entry points


PROBABILITY_ONLY = ("log_odds",)  # metrics defined on probabilities only


def check_head(clf: Classifier, keys: Sequence[str]) -> None:
    """Refuse, before any work, a metric the head's explained output does not allow."""
    for key in keys:
        if key in PROBABILITY_ONLY:
            clf.head.require_probability(f"the {key} metric")


def score_many(
    clf: Classifier,
    example: Example,
    attribution: Attribution,
    params_by_key: dict[str, Any],
    *,
    mlm: MaskedLM | None = None,
) -> dict[str, MetricResult]:
    """Several faithfulness metrics of one attribution, every variant scored in one batch.

    ``params_by_key`` maps metric keys to their params dataclass (None: defaults)."""
    ctx = _Context(clf, example, attribution, mlm)
    plans = {}
    for key, params in params_by_key.items():
        if key not in _PLANNERS:
            raise ValueError(f"{key!r} is not a faithfulness metric; known: {', '.join(_PLANNERS)}")
        plans[key] = _PLANNERS[key](ctx, params if params is not None else _BY_KEY[key].params_cls())
    variants = [v for plan in plans.values() for v in plan.variants]
    probs = clf.predict_proba(variants)[:, attribution.target] if variants else np.zeros(0)
    results, start = {}, 0
    for key, plan in plans.items():
        result = plan.finish(probs[start : start + len(plan.variants)])
        results[key] = _BY_KEY[key].checked(result, bounded=clf.head.is_probability)
        start += len(plan.variants)
    return results


def _compute(key: str) -> Callable[..., MetricResult]:
    def compute(
        clf: Classifier, example: Example, attribution: Attribution, params: Any, *, mlm: MaskedLM | None = None
    ) -> MetricResult:
        return score_many(clf, example, attribution, {key: params}, mlm=mlm)[key]

    compute.__name__ = key
    return compute


def mean_curve(curves: Sequence[Sequence[tuple[float, float]]], n_points: int = 21) -> dict[str, list[float]]:
    """Pointwise mean and 95% interval of several curves: on their shared x when they all have
    the same x (bins), else on ``n_points`` evenly spaced x by linear interpolation."""
    curves = [c for c in curves if c]
    if not curves:
        return {"x": [], "mean": [], "low": [], "high": []}
    xs = [tuple(x for x, _ in c) for c in curves]
    grid = (
        np.asarray(xs[0])
        if all(x == xs[0] for x in xs)
        else np.linspace(min(x[0] for x in xs), max(x[-1] for x in xs), n_points)
    )
    ys = np.stack([np.interp(grid, [x for x, _ in c], [y for _, y in c]) for c in curves])  # (curves, points)
    stats = [mean_interval(ys[:, j]) for j in range(len(grid))]
    return {
        "x": grid.tolist(),
        "mean": [s[0] for s in stats],
        "low": [s[1] for s in stats],
        "high": [s[2] for s in stats],
    }


METRIC_KEYS = tuple(_PLANNERS)


METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        key="deletion",
        function=_compute("deletion"),
        params_cls=CurveParams,
        description="area under the target probability as top-ranked words are removed (x = step / steps)",
        label="deletion AUC",
        higher_is_better=False,
        family="faithfulness",
        paper=_PAPER_CURVES,
        value_range=(0.0, 1.0),
    ),
    MetricSpec(
        key="insertion",
        function=_compute("insertion"),
        params_cls=CurveParams,
        description="area under the target probability as top-ranked words are put back into the removed input",
        label="insertion AUC",
        higher_is_better=True,
        family="faithfulness",
        paper=_PAPER_CURVES,
        value_range=(0.0, 1.0),
    ),
    MetricSpec(
        key="comprehensiveness",
        function=_compute("comprehensiveness"),
        params_cls=BinParams,
        description="mean drop of the target probability when the top-k% words are removed",
        label="comprehensiveness",
        higher_is_better=True,
        family="faithfulness",
        paper=_PAPER_ERASER,
        value_range=(-1.0, 1.0),
    ),
    MetricSpec(
        key="sufficiency",
        function=_compute("sufficiency"),
        params_cls=BinParams,
        description="mean drop of the target probability when only the top-k% words are kept",
        label="sufficiency",
        higher_is_better=False,
        family="faithfulness",
        paper=_PAPER_ERASER,
        value_range=(-1.0, 1.0),
    ),
    MetricSpec(
        key="log_odds",
        function=_compute("log_odds"),
        params_cls=LogOddsParams,
        description="ln p(target) after replacing the top-k% words minus ln p(target) before",
        label="log-odds",
        higher_is_better=False,
        family="faithfulness",
        paper="Shrikumar et al. 2017, arXiv:1704.02685; paper 004 (AML)",
    ),
)
_BY_KEY = {spec.key: spec for spec in METRICS}
