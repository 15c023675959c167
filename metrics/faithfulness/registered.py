"""The faithfulness metrics as registry entries (``metrics.base.MetricSpec``, read by
``metrics.REGISTRY``) and ``score_many`` / ``score_attributions``, which score every variant of
every requested metric of one attribution (or of every method's attribution of one example) in one
batch. Papers: Arras et al. 2017; Pham et al. 2022 (arXiv 2110.11929); ERASER (DeYoung et al. 2020,
arXiv 1911.03429); Brinner & Zarrieß 2023 (MaRC); Shrikumar et al. 2017 (arXiv 1704.02685) as Barkan
et al. 2024 (AML) uses it. Definitions in ``metrics.faithfulness``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.classifier import Classifier
from core.encoding import Variant
from core.masked_lm import MaskedLM
from core.types import Attribution, Example, ProgressFn
from metrics.base import MetricResult, MetricSpec
from metrics.faithfulness.plans import PLANNERS, BinParams, CurveParams, LogOddsParams, Plan
from metrics.faithfulness.removal import Context

_PAPER_CURVES = "Arras et al. 2017; Pham et al. 2022 (Deletion, Deletion_BERT)"
_PAPER_ERASER = "DeYoung et al. 2020 (ERASER); Brinner & Zarrieß 2023 (MaRC bins)"


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
    return score_attributions(clf, example, {"": attribution}, params_by_key, mlm=mlm)[""]


def score_attributions(
    clf: Classifier,
    example: Example,
    attributions: Mapping[str, Attribution],
    params_by_key: dict[str, Any],
    *,
    mlm: MaskedLM | None = None,
) -> dict[str, dict[str, MetricResult]]:
    """``score_many`` for several attributions of one example (one per method): every variant of
    every metric of every attribution in one scorer call, so the variants they share (the whole
    input, the emptied one, the same top words) are scored once. Results per method, then key."""
    return score_examples(clf, [plan_attributions(clf, example, attributions, params_by_key, mlm=mlm)])[0]


@dataclass(frozen=True)
class ExamplePlans:
    """The plans of every metric of every attribution of one example (``plans[method][key]``),
    the class each attribution explains, and their variants in plan order."""

    plans: dict[str, dict[str, Plan]]
    targets: dict[str, int]

    @property
    def variants(self) -> list[Variant]:
        return [v for per_method in self.plans.values() for plan in per_method.values() for v in plan.variants]

    def finish(self, outputs: np.ndarray, bounded: bool) -> dict[str, dict[str, MetricResult]]:
        """The results from the outputs of ``variants`` (n_variants, n_labels)."""
        results: dict[str, dict[str, MetricResult]] = {}
        start = 0
        for method, per_method in self.plans.items():
            results[method] = {}
            for key, plan in per_method.items():
                result = plan.finish(outputs[start : start + len(plan.variants), self.targets[method]])
                results[method][key] = BY_KEY[key].checked(result, bounded=bounded)
                start += len(plan.variants)
        return results


def plan_attributions(
    clf: Classifier,
    example: Example,
    attributions: Mapping[str, Attribution],
    params_by_key: dict[str, Any],
    *,
    mlm: MaskedLM | None = None,
) -> ExamplePlans:
    """The plans of ``score_attributions`` (the masked-LM fill-ins of ``removal="mlm"`` are found
    here), to be scored by ``score_examples`` with other examples' plans."""
    for key in params_by_key:
        if key not in PLANNERS:
            raise ValueError(f"{key!r} is not a faithfulness metric; known: {', '.join(PLANNERS)}")
    plans = {}
    for method, attribution in attributions.items():
        ctx = Context(clf, example, attribution, mlm)
        plans[method] = {
            key: PLANNERS[key](ctx, params if params is not None else BY_KEY[key].params_cls())
            for key, params in params_by_key.items()
        }
    return ExamplePlans(plans, {method: attribution.target for method, attribution in attributions.items()})


def score_examples(
    clf: Classifier, planned: Sequence[ExamplePlans], progress: ProgressFn | None = None
) -> list[dict[str, dict[str, MetricResult]]]:
    """The results of several examples' plans from one scorer call (``predict_proba_groups``:
    each example's identical variants scored once, every example's variants pooled into full
    batches, each example charged its own passes), per example, then method and key."""
    outputs = clf.predict_proba_groups([p.variants for p in planned], progress)
    bounded = clf.head.is_probability
    return [p.finish(out, bounded) for p, out in zip(planned, outputs, strict=True)]


def _compute(key: str) -> Callable[..., MetricResult]:
    def compute(
        clf: Classifier, example: Example, attribution: Attribution, params: Any, *, mlm: MaskedLM | None = None
    ) -> MetricResult:
        return score_many(clf, example, attribution, {key: params}, mlm=mlm)[key]

    compute.__name__ = key
    return compute


METRIC_KEYS = tuple(PLANNERS)
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
        paper="Shrikumar et al. 2017, arXiv:1704.02685; Barkan et al. 2024 (AML)",
    ),
)
BY_KEY = {spec.key: spec for spec in METRICS}
