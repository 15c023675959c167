"""The one Streamlit-aware facade over the engine: cached models, datasets and explanations.

Models are loaded once per process (``st.cache_resource``) and shared read-only; every call wraps
the shared ``LoadedClassifier`` in a fresh ``Classifier`` view, so each request counts its own
forward and backward passes. Predictions are cached with ``st.cache_data``; attributions are kept
per method in a bounded store shared by all sessions, under a key made of the model id, the
example, the method, its parameters (seed included), the target and the masked LM; both come
back as plain picklable records. Engine errors (``ValueError``) reach the pages as
``ValueError`` with a message meant for the user; pages show them with ``st.error``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import streamlit as st

import explainers
import metrics
from core import catalog, datasets, models
from core.classifier import Classifier, LoadedClassifier, load_classifier
from core.engine import explain_example, predict
from core.masked_lm import MaskedLM
from core.types import Attribution, Example
from explainers.lime import replaced_segments, sample_text
from explainers.loo import removal_variant
from metrics import adversarial as _adversarial
from metrics import plausibility
from metrics import randomization as _randomization
from metrics.base import MetricResult

ProgressFn = Callable[[float, str], None]

DEFAULT_MODEL = "minilm-sst2"
DEFAULT_MLM = "minilm-mlm"
FREE_TEXT = "free text"

# Loading arbitrary hub ids or folders fails in many ways (missing files, wrong architecture,
# incompatible weights); all of them become one message for the user.
_LOAD_ERRORS = (ValueError, OSError, KeyError, RuntimeError, ImportError, TypeError)


# --------------------------------------------------------------------------- models


@dataclass(frozen=True)
class ModelChoice:
    name: str
    label: str  # what the model picker shows
    description: str = ""


@dataclass(frozen=True)
class ModelInfo:
    name: str
    label_names: tuple[str, ...]
    pair: bool | None  # None: unknown (hub models may take one or two segments)
    max_length: int
    task: str | None = None


def model_choices() -> list[ModelChoice]:
    """Bundled classifiers that are present, then the catalog's hub classifiers."""
    present = set(models.bundled_names())
    entries = [e for e in catalog.classifiers("bundled") if e.name in present]
    known = {e.name for e in catalog.CATALOG}
    choices = [ModelChoice(e.name, f"{e.name} (bundled)", e.description) for e in entries]
    choices += [ModelChoice(name, f"{name} (bundled)") for name in sorted(present - known) if _is_classifier(name)]
    choices += [ModelChoice(e.name, f"{e.name} (hub)", e.description) for e in catalog.classifiers("hub")]
    return choices


def _is_classifier(name: str) -> bool:
    return models.model_info(name).get("architecture") == "sequence-classification"


def model_task(name: str) -> str | None:
    """The catalog task of a model (``sst2``, ``esnli`` ...), None for models outside the catalog."""
    entry = catalog.find(name)
    return entry.task if entry else None


def default_model() -> str:
    names = [c.name for c in model_choices()]
    return DEFAULT_MODEL if DEFAULT_MODEL in names else names[0]


@st.cache_resource(show_spinner="Loading the model…", max_entries=4)
def _loaded_classifier(name: str) -> LoadedClassifier:
    return load_classifier(name)


def _load(name: str) -> LoadedClassifier:
    name = name.strip()
    if not name:
        raise ValueError("no model given: pick a bundled model or type a hub id or a local folder")
    try:
        return _loaded_classifier(name)
    except _LOAD_ERRORS as error:
        message = str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
        raise ValueError(f"cannot load {name!r} as a sequence classifier: {message}") from error


def model_info(name: str) -> ModelInfo:
    """Label names, pair input and maximum length of a model (loading it if needed)."""
    loaded = _load(name)
    return ModelInfo(loaded.name, loaded.label_names, loaded.pair, loaded.max_length, model_task(name))


def classifier(name: str, batch_size: int = 64) -> Classifier:
    """A fresh per-request view (own pass counters) on the shared, cached model."""
    return Classifier(_load(name), batch_size=batch_size)


@st.cache_resource(show_spinner="Loading the masked language model…", max_entries=2)
def _loaded_masked_lm(name: str) -> MaskedLM:
    return MaskedLM.load(name)


def mlm_choices() -> list[str]:
    """Bundled masked LMs that are present (the default first), then the catalog's hub ones."""
    present = set(models.bundled_names())
    bundled = [e.name for e in catalog.masked_lms("bundled") if e.name in present]
    return bundled + [e.name for e in catalog.masked_lms("hub")]


def masked_lm(name: str = DEFAULT_MLM) -> MaskedLM:
    try:
        return _loaded_masked_lm(name)
    except _LOAD_ERRORS as error:
        raise ValueError(f"cannot load the masked language model {name!r}: {error}") from error


# --------------------------------------------------------------------------- datasets


@st.cache_data(show_spinner=False, ttl=60)
def dataset_options() -> dict[str, list[str]]:
    """``{dataset: [splits]}``: the bundled examples first, then what the data folder holds."""
    found = datasets.available_datasets()
    return {"examples": found.pop("examples"), **found}


# The loaded examples are frozen records shared read-only; st.cache_resource avoids pickling a
# 67k-sentence split on every rerun, which st.cache_data would do.
@st.cache_resource(show_spinner="Loading the dataset…", max_entries=8)
def _examples(name: str, split: str) -> tuple[Example, ...]:
    return tuple(datasets.load_examples(name, split))


def _dataset(name: str, split: str) -> tuple[Example, ...]:
    try:
        examples = _examples(name, split)
    except (ValueError, OSError) as error:
        raise ValueError(f"cannot load {name}/{split}: {error}") from error
    if not examples:
        raise ValueError(f"{name}/{split} has no examples")
    return examples


def dataset_size(name: str, split: str) -> int:
    return len(_dataset(name, split))


def dataset_example(name: str, split: str, index: int) -> Example:
    examples = _dataset(name, split)
    if not 0 <= index < len(examples):
        raise ValueError(f"example {index} is outside {name}/{split} (0..{len(examples) - 1})")
    return examples[index]


def random_index(name: str, split: str) -> int:
    return random.randrange(dataset_size(name, split))


def free_text_example(text: str, text_b: str = "") -> Example:
    """An example from typed text (words split by ``core.datasets.split_words``); a non-empty
    ``text_b`` makes it a premise/hypothesis pair."""
    segments = [datasets.split_words(text)]
    if text_b.strip():
        segments.append(datasets.split_words(text_b))
    return Example(segments=tuple(segments), dataset=FREE_TEXT, id=FREE_TEXT)


# --------------------------------------------------------------------------- methods


@dataclass(frozen=True)
class ParamField:
    """One explainer parameter, described for a generated form."""

    name: str
    default: Any
    help: str = ""
    choices: tuple | None = None
    min: float | None = None
    max: float | None = None


@dataclass(frozen=True)
class MethodInfo:
    key: str
    description: str
    family: str
    needs_mlm: bool
    fields: tuple[ParamField, ...]  # parameters the user may change (those fixing a variant are left out)


def methods() -> list[MethodInfo]:
    """Every registered explainer, in registry order."""
    return [_method_info(spec) for spec in explainers.REGISTRY.values()]


def _method_info(spec: explainers.ExplainerSpec) -> MethodInfo:
    defaults = spec.make_params()
    fields = tuple(
        ParamField(f.name, getattr(defaults, f.name), **f.metadata)
        for f in dataclasses.fields(spec.params_cls)
        if f.name not in spec.defaults
    )
    return MethodInfo(spec.key, spec.description, spec.family, spec.needs_mlm, fields)


# --------------------------------------------------------------------------- explanations


@dataclass(frozen=True)
class PredictionResult:
    """The example as the model sees it (cut to its maximum length) and its prediction."""

    example: Example
    probabilities: tuple[float, ...]
    predicted: int
    label_names: tuple[str, ...]
    dropped_words: int


@dataclass(frozen=True)
class HeatmapResult:
    prediction: PredictionResult
    target: int
    attributions: dict[str, Attribution]
    errors: dict[str, str] = field(default_factory=dict)


def _example_key(example: Example) -> str:
    return json.dumps(dataclasses.asdict(example), sort_keys=True)


def _params_key(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, default=str)


@st.cache_data(show_spinner=False, max_entries=256)
def _prediction(model: str, example_key: str, _example: Example) -> PredictionResult:
    clf = classifier(model)
    fitted, dropped = clf.fit_example(_example)
    prediction = predict(clf, fitted)
    return PredictionResult(fitted, prediction.probabilities, prediction.predicted, clf.label_names, dropped)


class _ResultCache:
    """A bounded, thread-safe store of finished attributions shared by every session.

    Not ``st.cache_data``: that would record the progress-bar updates made while a method runs
    and replay them on every cache hit, which Streamlit refuses for an element created outside
    the cached function. ``Attribution`` records are frozen with read-only arrays, so sharing
    them needs no copy.
    """

    def __init__(self, max_entries: int = 1024) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[tuple, Attribution] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> Attribution | None:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
            return self._items.get(key)

    def put(self, key: tuple, value: Attribution) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)


@st.cache_resource
def _result_cache() -> _ResultCache:
    return _ResultCache()


def _attribution(
    model: str,
    example: Example,
    method: str,
    target: int,
    params: dict[str, Any],
    mlm_name: str | None,
    progress: ProgressFn | None,
) -> Attribution:
    """One method's attribution, computed once per (model, example, method, target, params, masked LM)."""
    key = (model, _example_key(example), method, target, _params_key(params), mlm_name)
    cache = _result_cache()
    cached = cache.get(key)
    if cached is not None:
        return cached
    clf = classifier(model)
    mlm = masked_lm(mlm_name) if mlm_name else None
    explanation = explain_example(
        clf, example, [method], target=target, params={method: params}, mlm=mlm, progress=progress
    )
    if method in explanation.errors:
        raise ValueError(explanation.errors[method])
    attribution = explanation.attributions[method]
    cache.put(key, attribution)
    return attribution


def predict_example(model: str, example: Example) -> PredictionResult:
    """Prediction for ``example``; ``ValueError`` for empty text or a pair/single mismatch."""
    clf = classifier(model)
    clf.check_example(example)
    return _prediction(model, _example_key(example), example)


def explain(
    model: str,
    example: Example,
    method_keys: list[str],
    *,
    target: int | None = None,
    params: dict[str, dict[str, Any]] | None = None,
    mlm_name: str = DEFAULT_MLM,
    progress: ProgressFn | None = None,
) -> HeatmapResult:
    """Every method's attribution for the target class (the predicted one when None).

    The prediction's problems (empty text, pair mismatch, unloadable model) raise ``ValueError``;
    a method that fails records its message in ``errors`` and the others still run.
    """
    prediction = predict_example(model, example)
    target = prediction.predicted if target is None else target
    if not 0 <= target < len(prediction.label_names):
        raise ValueError(f"target {target} is not a class of {model} (0..{len(prediction.label_names) - 1})")
    attributions: dict[str, Attribution] = {}
    errors: dict[str, str] = {}
    for index, key in enumerate(method_keys):
        method_params = dict((params or {}).get(key, {}))

        def step(fraction: float, message: str, index: int = index) -> None:
            if progress is not None:
                progress(min(1.0, (index + fraction) / len(method_keys)), message)

        step(0.0, f"{key}: starting")
        try:
            needs_mlm = explainers.get(key).needs_mlm
            attributions[key] = _attribution(
                model, prediction.example, key, target, method_params, mlm_name if needs_mlm else None, step
            )
        except ValueError as error:
            errors[key] = str(error)
        step(1.0, f"{key}: done")
    return HeatmapResult(prediction, target, attributions, errors)


# =========================================================================== faithfulness
# Section owned by the faithfulness metrics (app_pages/faithfulness.py): metric results cached per
# model, example, method (with its parameters and target) and metric parameters.


@dataclass(frozen=True)
class MetricInfo:
    key: str
    description: str
    family: str
    higher_is_better: bool
    paper: str
    needs_rationale: bool
    fields: tuple[ParamField, ...]


def metric_infos(family: str | None = None) -> list[MetricInfo]:
    """Registered metrics (of one family when given), in registry order."""
    return [
        MetricInfo(
            spec.key,
            spec.description,
            spec.family,
            spec.higher_is_better,
            spec.paper,
            spec.needs_rationale,
            tuple(
                ParamField(f.name, getattr(spec.params_cls(), f.name), **f.metadata)
                for f in dataclasses.fields(spec.params_cls)
            ),
        )
        for spec in metrics.REGISTRY.values()
        if family is None or spec.family == family
    ]


@dataclass(frozen=True)
class MetricsRun:
    """One attribution's metric results (``results[metric]``) and what computing them cost."""

    results: dict[str, MetricResult]
    runtime_s: float
    forward_passes: int


def _uses_mlm(metric_params: dict[str, dict[str, Any]]) -> bool:
    return any(values.get("removal") == "mlm" for values in metric_params.values())


@st.cache_data(show_spinner=False, max_entries=4096)
def _metrics_run(
    model: str,
    example_key: str,
    attribution_key: str,
    params_key: str,
    mlm_name: str | None,
    _example: Example,
    _attribution: Attribution,
    _metric_params: dict[str, dict[str, Any]],
) -> MetricsRun:
    from core.commands.evaluate import metric_params, score_attribution

    clf = classifier(model)
    mlm = masked_lm(mlm_name) if mlm_name else None
    start = time.perf_counter()
    resolved = metric_params(list(_metric_params), _metric_params)
    results = score_attribution(clf, _example, _attribution, resolved, mlm=mlm)
    return MetricsRun(results, time.perf_counter() - start, clf.forward_passes)


def _attribution_key(attribution: Attribution) -> str:
    digest = hashlib.sha1(attribution.scores.tobytes()).hexdigest()
    return f"{attribution.method}|{attribution.target}|{_params_key(attribution.params)}|{digest}"


def score_attribution(
    model: str,
    example: Example,
    attribution: Attribution,
    metric_params: dict[str, dict[str, Any]],
    mlm_name: str = DEFAULT_MLM,
) -> MetricsRun:
    """The metrics ``{metric: {param: value}}`` of one attribution of ``example`` (the example as
    the model sees it), faithfulness metrics in one batch; cached."""
    return _metrics_run(
        model,
        _example_key(example),
        _attribution_key(attribution),
        _params_key(metric_params),
        mlm_name if _uses_mlm(metric_params) else None,
        example,
        attribution,
        metric_params,
    )


@dataclass(frozen=True)
class FaithfulnessResult:
    heatmap: HeatmapResult
    runs: dict[str, MetricsRun]  # method -> its metric results
    errors: dict[str, str]  # method -> message (explaining or scoring failed)


def faithfulness(
    model: str,
    example: Example,
    method_keys: list[str],
    metric_params: dict[str, dict[str, Any]],
    *,
    target: int | None = None,
    method_params: dict[str, dict[str, Any]] | None = None,
    mlm_name: str = DEFAULT_MLM,
    progress: ProgressFn | None = None,
) -> FaithfulnessResult:
    """Every method's attribution of ``example`` and its metrics; both steps cached, so changing
    a metric parameter recomputes the metrics only. Progress is reported between the cached
    calls, never from inside them (a cached function must not touch page elements)."""
    heatmaps = []
    for index, key in enumerate(method_keys):
        if progress is not None:
            progress(0.8 * index / max(1, len(method_keys)), f"{key}: attribution")
        heatmaps.append(explain(model, example, [key], target=target, params=method_params, mlm_name=mlm_name))
    prediction = heatmaps[0].prediction if heatmaps else predict_example(model, example)
    attributions = {k: a for h in heatmaps for k, a in h.attributions.items()}
    errors = {k: e for h in heatmaps for k, e in h.errors.items()}
    heatmap = HeatmapResult(prediction, heatmaps[0].target if heatmaps else prediction.predicted, attributions, errors)
    runs: dict[str, MetricsRun] = {}
    for index, (method, attribution) in enumerate(attributions.items()):
        if progress is not None:
            progress(0.8 + 0.2 * index / max(1, len(attributions)), f"{method}: metrics")
        try:
            runs[method] = score_attribution(model, prediction.example, attribution, metric_params, mlm_name)
        except ValueError as error:
            errors[method] = str(error)
    if progress is not None:
        progress(1.0, "done")
    return FaithfulnessResult(heatmap, runs, errors)


@dataclass(frozen=True)
class MetricSummary:
    mean: float
    low: float
    high: float
    n: int
    skipped: int


@dataclass(frozen=True)
class SliceResult:
    """Metrics of several methods over a dataset slice.

    ``values[method][metric]`` holds one value per example (None where the metric skipped the
    example or the method failed), ``summary`` their mean and 95% interval, ``mean_curves`` the
    pointwise mean curve with its 95% band (``x``, ``mean``, ``low``, ``high``)."""

    example_ids: tuple[str, ...]
    values: dict[str, dict[str, list[float | None]]]
    summary: dict[str, dict[str, MetricSummary]]
    mean_curves: dict[str, dict[str, dict[str, list[float]]]]
    errors: dict[str, str]
    runtime_s: float
    forward_passes: int


def slice_examples(dataset: str, split: str, n: int, *, random_order: bool = False, seed: int = 0) -> list[Example]:
    """The first ``n`` examples of a split, or ``n`` drawn at random with ``seed`` (in dataset order)."""
    from core.commands.evaluate import select_examples

    examples = _dataset(dataset, split)
    if random_order:
        return select_examples(examples, min(n, len(examples)), seed)
    return list(examples[:n])


def evaluate_slice(
    model: str,
    examples: list[Example],
    method_keys: list[str],
    metric_params: dict[str, dict[str, Any]],
    *,
    method_params: dict[str, dict[str, Any]] | None = None,
    mlm_name: str = DEFAULT_MLM,
    progress: ProgressFn | None = None,
) -> SliceResult:
    """Every method and metric on every example (predicted class), from the per-example caches."""
    from metrics.faithfulness import mean_curve

    start = time.perf_counter()
    values = {m: {k: [] for k in metric_params} for m in method_keys}
    curves: dict[str, dict[str, list]] = {m: {k: [] for k in metric_params} for m in method_keys}
    errors: dict[str, str] = {}
    passes = 0
    for index, example in enumerate(examples):
        if progress is not None:
            progress(index / max(1, len(examples)), f"example {index + 1} of {len(examples)}")
        result = faithfulness(
            model, example, method_keys, metric_params, method_params=method_params, mlm_name=mlm_name
        )
        for method in method_keys:
            run = result.runs.get(method)
            if run is None:
                errors.setdefault(method, result.errors.get(method, "failed"))
            else:
                passes += run.forward_passes
            for key in metric_params:
                found = run.results.get(key) if run is not None else None
                values[method][key].append(found.value if found is not None else None)
                if found is not None and found.curve:
                    curves[method][key].append(found.curve)
    if progress is not None:
        progress(1.0, f"{len(examples)} examples done")
    summary = {
        m: {
            k: MetricSummary(*metrics.mean_interval([v for v in vals if v is not None]), vals.count(None))
            for k, vals in per.items()
        }
        for m, per in values.items()
    }
    mean_curves = {m: {k: mean_curve(c) for k, c in per.items() if c} for m, per in curves.items()}
    return SliceResult(
        tuple(e.id for e in examples), values, summary, mean_curves, errors, time.perf_counter() - start, passes
    )


# =========================================================================== input marginalization
# Section owned by the Input Marginalization page (app_pages/input_marginalization.py): cost
# estimates, the rows of its word and candidate tables, and its counterfactual gallery.


@dataclass(frozen=True)
class CostEstimate:
    """Forward passes a run will need (classifier passes at most: duplicates are scored once)
    and the seconds they take at a measured rate (None without a measurement)."""

    mlm_passes: int
    classifier_passes: int
    seconds: float | None


def passes_per_second(attribution: Attribution) -> float | None:
    """The classifier's measured throughput on one attribution (forward passes per second)."""
    if attribution.runtime_s <= 0 or attribution.forward_passes <= 0:
        return None
    return attribution.forward_passes / attribution.runtime_s


def estimate_cost(method: str, n_words: int, params: dict[str, Any], rate: float | None) -> CostEstimate:
    """Passes of ``im``, ``lime``, ``lime_mlm`` or ``kernel_shap`` on ``n_words`` words; the time
    assumes a masked-LM pass costs about one classifier pass (true of the bundled MiniLMs)."""
    p = explainers.get(method).make_params(params)
    mlm_passes = 0
    if method == "im":
        per_word = p.k if p.selection == "topk" else p.max_candidates
        mlm_passes, classifier_passes = n_words, 1 + n_words * per_word
    elif method in ("lime", "lime_mlm", "kernel_shap"):
        classifier_passes = p.n_samples
        if method == "lime_mlm":
            # lime removes 1..n words (mean (n + 1) / 2); one_at_a_time needs a pass per removed word.
            per_sample = 1.0 if p.fill == "all_at_once" else (n_words + 1) / 2
            mlm_passes = round((p.n_samples - 1) * per_sample)
    else:
        raise ValueError(f"no cost estimate for {method!r}")
    seconds = (mlm_passes + classifier_passes) / rate if rate else None
    return CostEstimate(mlm_passes, classifier_passes, seconds)


# Per-step cost of the mask optimisers relative to one batch-2 forward+backward pass of the
# classifier, calibrated with `python -m core bench` on the bundled models (BENCHMARKS.md): a MaRC
# step is one such pass; an fAML step also runs the attribution encoder (same size) and its
# selection; pAML pre-training costs about 1.6 such passes per training example and epoch.
MARC_STEP_COST = 1.0
AML_STEP_COST = 4.0
AML_PRETRAIN_COST = 1.6


@dataclass(frozen=True)
class MaskCostEstimate:
    """Seconds a MaRC or AML run should take; ``pretrain_s`` is AML's one-off pre-training."""

    seconds: float
    pretrain_s: float = 0.0
    note: str = ""


@st.cache_data(show_spinner=False, max_entries=64)
def _step_seconds(model: str, example_key: str, _example: Example) -> float:
    from core.bench import step_seconds

    clf = classifier(model)
    return step_seconds(clf, clf.fit_example(_example)[0])


@st.cache_data(show_spinner=False, max_entries=64)
def _forward_rate(model: str, example_key: str, _example: Example) -> float:
    from core.bench import forward_rate

    clf = classifier(model)
    return forward_rate(clf, clf.fit_example(_example)[0])


def estimate_perturbation_cost(model: str, example: Example, method: str, params: dict[str, Any]) -> CostEstimate:
    """``estimate_cost`` for this example at the classifier's measured rate on it."""
    rate = _forward_rate(model, _example_key(example), example)
    return estimate_cost(method, len(classifier(model).fit_example(example)[0].words), params, rate)


def estimate_mask_cost(model: str, example: Example, method: str, params: dict[str, Any]) -> MaskCostEstimate:
    """Time estimate for ``marc`` or ``aml`` on this example, from one timed optimisation step."""
    step = _step_seconds(model, _example_key(example), example)
    p = explainers.get(method).make_params(params)
    if method == "marc":
        note = f"at most {p.n_steps} optimisation steps" + (
            "; the early stop often ends sooner" if p.early_stop else ""
        )
        return MaskCostEstimate(p.n_steps * MARC_STEP_COST * step, note=note)
    if method == "aml":
        finetune = (p.n_steps if p.mode == "fine_tune" else 0) * AML_STEP_COST * step + step
        pretrain = p.n_train * p.n_epochs * AML_PRETRAIN_COST * step
        return MaskCostEstimate(finetune, pretrain, f"pre-training on {p.n_train} examples once per model")
    raise ValueError(f"no mask-optimisation estimate for {method!r}")


def im_word_rows(example: Example, im: Attribution, loo: Attribution) -> list[dict[str, Any]]:
    """One row per word: IM and leave-one-out scores and what the masked LM made of the word."""
    extras = im.extras
    return [
        {
            "#": i,
            "word": word,
            "IM": float(im.scores[i]),
            "LOO_empty": float(loo.scores[i]),
            "MLM top-1": extras["top1"][i],
            "top-1 likelihood": extras["top1_likelihood"][i],
            "top-1 = word": extras["top1_is_original"][i],
            "likelihood of the word": extras["original_likelihood"][i],
            "candidate mass": extras["mass"][i],
            "expectation": extras["expectations"][i],
        }
        for i, word in enumerate(example.words)
    ]


def im_candidate_rows(im: Attribution, word: int, label_names: tuple[str, ...]) -> list[dict[str, Any]]:
    """The candidate table of one word: fill-in, likelihood, the target probability with it in
    place, its weight and weighted contribution to the expectation."""
    return [
        {
            "rank": rank,
            "fill-in": row["text"],
            "original word": row["is_original"],
            "likelihood": row["likelihood"],
            "weight": row["weight"],
            f"P({label_names[im.target]})": row["probability"],
            "contribution": row["contribution"],
            "predicted": label_names[row["predicted"]],
        }
        for rank, row in enumerate(im.extras["candidates"][word], start=1)
    ]


def _counterfactual(
    where: dict[str, Any], text: str, probabilities: Sequence[float], target: int, label_names: tuple[str, ...]
) -> dict[str, Any]:
    predicted = max(range(len(probabilities)), key=probabilities.__getitem__)
    return {
        **where,
        "counterfactual": text,
        "predicted": label_names[predicted],
        "P(predicted)": float(probabilities[predicted]),
        f"P({label_names[target]})": float(probabilities[target]),
    }


def im_counterfactual_rows(example: Example, im: Attribution, label_names: tuple[str, ...]) -> list[dict[str, Any]]:
    """Every input IM scored: one word replaced by one of its fill-ins."""
    return [
        _counterfactual(
            {"#": i, "word": example.words[i], "fill-in": row["text"], "likelihood": row["likelihood"]},
            sample_text(replaced_segments(example, {i: row["text"]})),
            row["probabilities"],
            im.target,
            label_names,
        )
        for i, table in enumerate(im.extras["candidates"])
        for row in table
    ]


def lime_counterfactual_rows(lime: Attribution, label_names: tuple[str, ...]) -> list[dict[str, Any]]:
    """The first samples LIME scored (the original first), with their kernel weights."""
    return [
        _counterfactual(
            {"words kept": s["kept"], "weight": s["weight"]}, s["text"], s["probabilities"], lime.target, label_names
        )
        for s in lime.extras["samples"]
    ]


@st.cache_data(show_spinner=False, max_entries=256)
def _loo_probabilities(model: str, example_key: str, _example: Example) -> list[tuple[float, ...]]:
    clf = classifier(model)
    encoded = clf.encode(_example)
    variants = [removal_variant(clf, encoded, [i], "delete") for i in range(encoded.n_words)]
    return [tuple(float(p) for p in row) for row in clf.predict_proba(variants)]


def loo_counterfactual_rows(
    model: str, example: Example, target: int, label_names: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Every input leave-one-out (delete) scored: one word deleted (all class probabilities,
    n forward passes, cached)."""
    rows = _loo_probabilities(model, _example_key(example), example)
    return [
        _counterfactual(
            {"#": i, "word": word},
            sample_text(replaced_segments(example, {i: None})),
            probabilities,
            target,
            label_names,
        )
        for i, (word, probabilities) in enumerate(zip(example.words, rows))
    ]


# =========================================================================== rationales
# Section owned by the plausibility metrics (app_pages/rationales.py): agreement of attributions with
# human rationales, for one example and over a dataset slice. The metrics are plain numpy; a
# slice's explanations come from the per-method cache and its metrics are cached per request.


def _plausibility_params(metric_params: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from core.commands.evaluate import metric_params as resolve

    return resolve(list(metric_params), metric_params)


def binarized(attribution: Attribution, threshold: float) -> Attribution:
    """The words a map selects at ``threshold`` (paper 000: negatives zeroed, divided by the
    maximum), as a 0/1 word-level attribution for the heatmap."""
    selected = plausibility.binarize(attribution.scores, threshold).astype(np.float32)
    return dataclasses.replace(attribution, scores=selected, subwords=(), subword_scores=None, subword_word_ids=())


def human_rows(example: Example) -> dict[str, Attribution]:
    """The human masks of an example as 0/1 attributions: the majority, then each annotator."""
    masks = {"human · majority": example.rationale} if example.rationale is not None else {}
    if len(example.rationales) > 1:
        masks.update({f"human · annotator {i}": mask for i, mask in enumerate(example.rationales)})
    return {
        name: Attribution("human", example.id, 0, example.words, np.asarray(mask, dtype=np.float32))
        for name, mask in masks.items()
    }


def human_outline(example: Example, annotator: str) -> tuple[int, ...] | None:
    """The human mask ``annotator`` picks (see ``metrics.plausibility.human_mask``), None when empty."""
    mask, empty = plausibility.human_mask(example, annotator)
    return None if empty else tuple(int(m) for m in mask)


@st.cache_data(show_spinner=False)
def annotator_count(dataset: str, split: str) -> int:
    """The most annotator masks any example of the split has."""
    return max((len(e.rationales) for e in _dataset(dataset, split)), default=0)


def rationale_scores(
    example: Example, attributions: dict[str, Attribution], metric_params: dict[str, dict[str, Any]]
) -> dict[str, dict[str, MetricResult]]:
    """Every requested plausibility metric of every attribution (``[method][metric]``); a skipped
    metric has NaN and its reason in ``extras["skipped"]``."""
    resolved = _plausibility_params(metric_params)
    return {
        method: {key: metrics.get(key).compute(None, example, attribution, p) for key, p in resolved.items()}
        for method, attribution in attributions.items()
    }


def rationale_ceiling(example: Example, metric_params: dict[str, dict[str, Any]]) -> dict[str, MetricResult]:
    """The annotators' agreement with each other under the same metrics (those defined for masks)."""
    resolved = _plausibility_params(metric_params)
    return {
        key: plausibility.human_ceiling(example, key, p)
        for key, p in resolved.items()
        if key in plausibility.CEILING_KEYS
    }


@dataclass(frozen=True)
class SliceItem:
    index: int  # position in the split
    example: Example  # as the model sees it
    predicted: int
    correct: bool | None


@dataclass(frozen=True)
class RationaleSlice:
    """Plausibility of several methods over a slice.

    ``values[method][metric]`` has one value per item (None where the rationale was empty or the
    method failed); ``summary`` and ``ceiling`` (the annotators among themselves) are means with
    95% intervals; ``thresholds[method]`` is paper 000's optimal tau search and ``at_best`` the
    threshold metrics at that tau; ``human_coverage`` the share of words the humans marked;
    ``micro[method][metric]`` ERASER's micro average of token F1 and IOU-F1 (precision, recall, F1)."""

    items: tuple[SliceItem, ...]
    values: dict[str, dict[str, list[float | None]]]
    summary: dict[str, dict[str, plausibility.Summary]]
    micro: dict[str, dict[str, dict[str, float]]]
    ceiling: dict[str, plausibility.Summary]
    thresholds: dict[str, plausibility.ThresholdSearch]
    at_best: dict[str, dict[str, plausibility.Summary]]
    human_coverage: plausibility.Summary
    errors: dict[str, str]
    runtime_s: float
    forward_passes: int


def slice_indices(dataset: str, split: str, n: int, *, random_order: bool = False, seed: int = 0) -> list[int]:
    """Positions of the first ``n`` examples of a split, or of ``n`` drawn with ``seed`` (sorted)."""
    from core.commands.evaluate import select_examples

    size = dataset_size(dataset, split)
    n = min(n, size)
    return select_examples(range(size), n, seed) if random_order else list(range(n))


def rationale_slice(
    model: str,
    dataset: str,
    split: str,
    indices: list[int],
    method_keys: list[str],
    metric_params: dict[str, dict[str, Any]],
    *,
    correct_only: bool = False,
    objective: str = "iou",
    method_params: dict[str, dict[str, Any]] | None = None,
    mlm_name: str = DEFAULT_MLM,
    progress: ProgressFn | None = None,
) -> RationaleSlice:
    """Explain the predicted class of every example with every method and score the agreement with
    the humans; ``correct_only`` keeps the correctly predicted examples (paper 000)."""
    request = json.dumps(
        [model, dataset, split, indices, method_keys, metric_params, correct_only, objective, method_params, mlm_name],
        sort_keys=True,
        default=str,
    )
    cache = _rationale_cache()
    found = cache.get((request,))
    if found is None:
        found = _rationale_slice(request, progress)
        cache.put((request,), found)
    return found


@st.cache_resource
def _rationale_cache() -> _ResultCache:
    """Finished slices, shared by every session (not ``st.cache_data``: see ``_ResultCache``)."""
    return _ResultCache(max_entries=16)


def _rationale_slice(request: str, _progress: ProgressFn | None) -> RationaleSlice:
    model, dataset, split, indices, method_keys, metric_params, correct_only, objective, method_params, mlm_name = (
        json.loads(request)
    )
    start = time.perf_counter()
    items: list[SliceItem] = []
    attributions: list[dict[str, Attribution]] = []
    errors: dict[str, str] = {}
    for position, index in enumerate(indices):
        if _progress is not None:
            _progress(position / max(1, len(indices)), f"example {position + 1} of {len(indices)}")
        heatmap = explain(
            model, dataset_example(dataset, split, index), method_keys, params=method_params, mlm_name=mlm_name
        )
        example = heatmap.prediction.example
        correct = None if example.label is None else example.label == heatmap.prediction.predicted
        for method, message in heatmap.errors.items():
            errors.setdefault(method, message)
        if correct_only and correct is False:
            continue
        items.append(SliceItem(index, example, heatmap.prediction.predicted, correct))
        attributions.append(heatmap.attributions)
    if _progress is not None:
        _progress(1.0, "scoring the agreement")
    resolved = _plausibility_params(metric_params)
    results = {
        method: {
            key: [
                metrics.get(key).compute(None, item.example, found[method], p) if method in found else None
                for item, found in zip(items, attributions)
            ]
            for key, p in resolved.items()
        }
        for method in method_keys
    }
    values = {
        method: {key: [None if r is None or "skipped" in r.extras else r.value for r in rs] for key, rs in per.items()}
        for method, per in results.items()
    }
    summary = {
        method: {key: plausibility.summarize(r for r in rs if r is not None) for key, rs in per.items()}
        for method, per in results.items()
    }
    micro = {
        method: {
            key: plausibility.micro_f1(r for r in rs if r is not None)
            for key, rs in per.items()
            if key in plausibility.MICRO_KEYS
        }
        for method, per in results.items()
    }
    ceiling = plausibility.slice_ceiling([item.example for item in items], resolved)
    annotator = next((p.annotator for p in resolved.values()), "majority")
    thresholds: dict[str, plausibility.ThresholdSearch] = {}
    at_best: dict[str, dict[str, plausibility.Summary]] = {}
    for method in method_keys:
        pairs = [(item.example, found[method]) for item, found in zip(items, attributions) if method in found]
        try:
            search = plausibility.best_threshold(pairs, objective, annotator)
        except ValueError as error:
            errors.setdefault(method, str(error))
            continue
        thresholds[method] = search
        at_best[method] = plausibility.at_threshold(pairs, search.best, annotator)
    shares = []
    for item in items:
        mask, empty = plausibility.human_mask(item.example, annotator)
        shares.append(MetricResult(float(mask.mean()), extras={"skipped": empty} if empty else {}))
    passes = sum(a.forward_passes for found in attributions for a in found.values())
    return RationaleSlice(
        tuple(items),
        values,
        summary,
        micro,
        ceiling,
        thresholds,
        at_best,
        plausibility.summarize(shares),
        errors,
        time.perf_counter() - start,
        passes,
    )


# =========================================================================== sanity checks
# Section owned by the layer-randomisation sanity checks (app_pages/sanity_checks.py): whole runs
# cached per model, examples, methods (with their parameters), mode, seed, targets and top-k.


def randomization_steps(model: str, mode: str) -> list[str]:
    """Step names of a run on ``model`` (``original`` first); ValueError for an architecture
    that cannot be split into head, blocks and embeddings."""
    return [step.name for step in _randomization.plan(_load(model).model, mode)]


def _examples_key(examples: list[Example]) -> str:
    return hashlib.sha1("\n".join(_example_key(e) for e in examples).encode()).hexdigest()


@st.cache_resource
def _randomization_cache() -> _ResultCache:
    """Finished runs shared by every session (not ``st.cache_data``: see ``_ResultCache``)."""
    return _ResultCache(max_entries=32)


def randomize(
    model: str,
    examples: list[Example],
    method_keys: list[str],
    *,
    mode: str,
    seed: int,
    targets: list[int] | None = None,
    params: dict[str, dict[str, Any]] | None = None,
    top_k_fraction: float = 0.2,
    mlm_name: str = DEFAULT_MLM,
    progress: ProgressFn | None = None,
) -> _randomization.RandomizationResult:
    """Cascading or independent randomisation of ``model`` (a deep copy per run: the cached
    model is never touched), every method on every example after each step; cached."""
    params = {key: dict((params or {}).get(key, {})) for key in method_keys}
    needs_mlm = any(explainers.get(key).needs_mlm for key in method_keys)
    key = (
        model,
        _examples_key(examples),
        tuple(method_keys),
        mode,
        seed,
        None if targets is None else tuple(targets),
        _params_key(params),
        top_k_fraction,
        mlm_name if needs_mlm else None,
    )
    cache = _randomization_cache()
    cached = cache.get(key)
    if cached is not None:
        return cached
    clf = classifier(model)
    mlm = masked_lm(mlm_name) if needs_mlm else None
    result = _randomization.run_randomization(
        clf,
        examples,
        method_keys,
        mode=mode,
        seed=seed,
        targets=targets,
        params=params,
        top_k_fraction=top_k_fraction,
        mlm=mlm,
        progress=progress,
    )
    cache.put(key, result)
    return result


# =========================================================================== adversarial
# Section owned by the attacks on explanations (app_pages/adversarial.py): each example's attack
# cached per model, example, methods (with their parameters), attack and attack parameters.


def attack_info(attack: str, preset: str = "quick") -> MethodInfo:
    """The parameters of an attack as a form description (defaults from the preset)."""
    defaults = _adversarial.make_params(attack, preset)
    fields = tuple(
        ParamField(f.name, getattr(defaults, f.name), **f.metadata)
        for f in dataclasses.fields(defaults)
        if f.name != "objective"
    )
    return MethodInfo(f"attack_{attack}", f"{attack} attack", "adversarial", attack == "substitution", fields)


@st.cache_resource
def _attack_cache() -> _ResultCache:
    """Finished attacks shared by every session (not ``st.cache_data``: see ``_ResultCache``)."""
    return _ResultCache(max_entries=256)


def attack(
    model: str,
    examples: list[Example],
    method_keys: list[str],
    *,
    attack: str,
    attack_params: dict[str, Any],
    preset: str = "quick",
    params: dict[str, dict[str, Any]] | None = None,
    mlm_name: str = DEFAULT_MLM,
    progress: ProgressFn | None = None,
) -> list[dict[str, _adversarial.AttackResult]]:
    """Attack every method's explanation of every example (the predicted class); one cache entry
    per example, so a longer slice reuses the examples already attacked."""
    params = {key: dict((params or {}).get(key, {})) for key in method_keys}
    chosen = _adversarial.make_params(attack, preset, attack_params)
    needs_mlm = attack == "substitution" or any(explainers.get(key).needs_mlm for key in method_keys)
    cache = _attack_cache()
    results = []
    for index, example in enumerate(examples):
        key = (
            model,
            _example_key(example),
            tuple(method_keys),
            attack,
            _params_key(dataclasses.asdict(chosen)),
            _params_key(params),
            mlm_name if needs_mlm else None,
        )
        cached = cache.get(key)
        if cached is None:

            def step(fraction: float, message: str, index: int = index) -> None:
                if progress is not None:
                    progress(
                        min(1.0, (index + fraction) / len(examples)),
                        f"example {index + 1} of {len(examples)}, {message}",
                    )

            cached = _adversarial.attack_example(
                classifier(model),
                example,
                method_keys,
                attack,
                chosen,
                mlm=masked_lm(mlm_name) if needs_mlm else None,
                explainer_params=params,
                progress=step,
            )
            cache.put(key, cached)
        results.append(cached)
    if progress is not None:
        progress(1.0, "done")
    return results


def attack_summary(results: list[dict[str, _adversarial.AttackResult]]) -> dict[str, dict[str, Any]]:
    """Mean measures per method over the examples, with the fragility ranking."""
    return _adversarial.summarize(results)
