"""The Python API for notebooks: the engine behind the app and ``python -m cli``, one call away.

``explain(model, text_or_pair, methods=...)`` attributes one text (or premise/hypothesis pair) with
any registered methods and returns an ``ExplanationResult``, which Jupyter shows as the app's
heatmap; ``explain_many(model, dataset, methods=...)`` does so for every example of a dataset or
list of texts, explaining examples of similar length together; ``compare(model_a, model_b, text,
methods=...)`` puts two models' explanations side by side (``model_b="randomized"``: model A's
randomized copy) with each method's rank correlation;
``evaluate(model, dataset, methods=..., metrics=...)`` scores the methods over a
``datasets.Dataset`` (or a bundled dataset name and split) and returns an ``EvaluationResult``;
``run(model, dataset, split, ...)`` does so in the run store, as ``python -m cli run`` does
(resumable, read back when stored), ``runs()`` lists the store and ``open_run(run_id)`` reads a
stored run back (``api/runs.py``).

``model`` is any of: a bundled name (``"minilm-sst2"``), a hub id, a local folder, an
already-loaded ``transformers`` sequence classifier with ``tokenizer=`` (a fast tokenizer), a
``text-classification`` ``pipeline``, or the ``LoadedClassifier`` that ``load`` returns (load once,
explain many times). A model object is frozen in place as the project's own loader freezes its
models: ``eval()`` and ``requires_grad_(False)`` on every parameter, nothing else (it is not
copied, not moved to another device unless ``device=`` is given, and its weights never change).
Any attention kernel will do: the attention methods read their weights from an eager-attention
view of the same weights (core/attention_view.py), so a model loaded with the fused ``sdpa``
kernel keeps it for every other method.

Methods and metrics are the registries' keys (``explainers.REGISTRY``, ``metrics.REGISTRY``);
``params`` maps a method or metric key to its parameter overrides, as ``--param`` does.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import explainers
from api.compare import ComparisonResult, compare
from api.inputs import check_seed, examples_from_dataset, is_count, one_example, read_examples, warn_alignment
from api.results import EvaluationResult, ExplanationResult, ExplanationResults
from api.runs import open_run, run, runs
from core.classifier import Classifier, autocast_options
from core.datasets.labels import align_labels, class_index
from core.devices import chosen_device
from core.loaded import LoadedClassifier, classifier_from_model, load_classifier
from core.masked_lm import MaskedLM
from core.types import Attribution, Example, ProgressFn
from engine.evaluate import (
    DEFAULT_GROUP,
    DEFAULT_METHODS,
    DEFAULT_METRICS,
    check_target,
    evaluate_slice,
    head_defaults,
    length_groups,
    metric_params,
    needs_mlm,
    resolve_metrics,
)
from engine.explain import Explanation, explain_example, explain_examples
from engine.resources import Resources

if TYPE_CHECKING:
    import torch
    from datasets import Dataset

DEFAULT_MLM = "minilm-mlm"


def load(model: Any, tokenizer: Any = None, *, device: str | torch.device | None = None) -> LoadedClassifier:
    """A shareable, frozen classifier from any of the ``model`` forms this API accepts. A loaded
    classifier is used where it is: a ``device`` other than its own is refused, not ignored."""
    if isinstance(model, LoadedClassifier):
        if tokenizer is not None:
            raise ValueError("tokenizer= is for a model object; this classifier already has one")
        if device is not None and not _on_device(model, device):
            raise ValueError(
                f"this classifier is on {model.device}, not {device}: load it on that device "
                f"(api.load(name, device={str(device)!r})) or leave device= out"
            )
        return model
    if isinstance(model, (str, os.PathLike)):
        if tokenizer is not None:
            raise ValueError(f"tokenizer= is for a model object; {str(model)!r} is loaded with its own")
        return load_classifier(str(model), device)
    import torch
    from transformers import Pipeline, TextClassificationPipeline

    if isinstance(model, Pipeline):
        if not isinstance(model, TextClassificationPipeline):
            raise TypeError(f"a {type(model).__name__} is not a text-classification pipeline")
        return classifier_from_model(
            model.model, tokenizer or model.tokenizer, name=model.model.name_or_path, device=device
        )
    if not isinstance(model, torch.nn.Module):
        raise ValueError(  # noqa: TRY004
            "model must be a model name, a folder, a loaded transformers model (with tokenizer=), a "
            f"text-classification pipeline or a LoadedClassifier, got {model!r:.80}"
        )
    if tokenizer is None:
        raise ValueError(f"give tokenizer= with a {type(model).__name__} model object")
    return classifier_from_model(model, tokenizer, device=device)


def explain(
    model: Any,
    text_or_pair: str | Sequence[str] | Example,
    methods: str | Sequence[str] = "panel",
    *,
    target: int | str | None = None,
    params: Mapping[str, Mapping[str, Any]] | None = None,
    seed: int | None = None,
    mlm: str | MaskedLM = DEFAULT_MLM,
    tokenizer: Any = None,
    device: str | torch.device | None = None,
    batch_size: int = 64,
    progress: ProgressFn | None = None,
    head_type: str | None = None,
    autocast: str | None = None,
) -> ExplanationResult:
    """Attribute one text, a (premise, hypothesis) pair (two texts, refused by a model known to
    read one; several texts go to ``explain_many``) or an ``Example`` with ``methods``
    (``"panel"``, also ``"default"``: ``explainers.DEFAULT_PANEL``; ``"all"``, comma-separated keys
    or a list) for ``target``: a class index or label name, the predicted class when None or
    ``"predicted"`` (as ``explain_many`` and ``evaluate`` name it; a class of that name is that
    class).
    ``seed`` seeds every stochastic method; ``mlm`` (a name or a ``MaskedLM``) is loaded only when
    a method needs it. A method that refuses the text is listed in the result's ``errors``; the
    others still run. ``head_type`` overrides the head the config gives (``single_label``,
    ``multi_label``, ``regression``; core/heads.py). ``autocast`` (``"float16"`` on a GPU,
    ``"bfloat16"`` on a GPU or CPU) scores perturbations in that type (``Classifier``); gradients
    stay float32. No methods, params of a method that are not a mapping and a ``batch_size`` below
    1 are refused (``ValueError``)."""
    example = one_example(text_or_pair)
    keys, overrides = _checked_methods(methods, params, batch_size)
    check_seed(seed)
    loaded = load(model, tokenizer, device=device)
    loaded.check_texts(len(example.segments))
    clf, masked_lm = _explainer(loaded, keys, mlm, batch_size, head_type, autocast, device)
    predicted = target == "predicted" and target not in loaded.label_names
    result = explain_example(
        clf,
        example,
        keys,
        target=None if predicted else class_index(target, loaded.label_names),
        params=overrides,
        seed=seed,
        mlm=masked_lm,
        progress=progress,
        resources=Resources.saved(),
    )
    return ExplanationResult(loaded.name, loaded.label_names, result)


def explain_many(
    model: Any,
    dataset: Dataset | str | Iterable[Example | str],
    methods: str | Sequence[str] = "panel",
    *,
    target: int | str = "predicted",
    split: str | None = None,
    limit: int | None = None,
    text_column: str = "text",
    text_pair_column: str | None = None,
    label_column: str | None = "label",
    params: Mapping[str, Mapping[str, Any]] | None = None,
    seed: int | None = None,
    mlm: str | MaskedLM = DEFAULT_MLM,
    tokenizer: Any = None,
    device: str | torch.device | None = None,
    batch_size: int = 64,
    progress: ProgressFn | None = None,
    head_type: str | None = None,
    autocast: str | None = None,
) -> ExplanationResults:
    """``explain`` for every example of ``dataset`` (read as ``evaluate`` reads it), without
    metrics: one result per example, in the dataset's order (``ExplanationResults``: a list that
    Jupyter shows as heatmaps, with ``to_pandas``), each equal to ``explain`` of its text.
    Examples of similar length are explained together, ``DEFAULT_GROUP`` at a time
    (``engine.evaluate.length_groups``; ``engine.explain.explain_examples``: the gradient and
    attention methods in one padded pass, the perturbation methods' variants pooled in the
    scorer's batches): the one-pass methods take about 40% of the time of one ``explain`` call
    per text (BENCHMARKS.md). ``target``: ``"predicted"``, ``"gold"`` (each example's label; the
    predicted class where an example has none) or one class, an index or label name, for every
    example.
    ``progress(fraction, message)`` is called as the groups go."""
    keys, overrides = _checked_methods(methods, params, batch_size)
    check_seed(seed)
    examples = read_examples(dataset, split, limit, (text_column, text_pair_column, label_column))
    loaded = load(model, tokenizer, device=device)
    warn_alignment(examples, loaded.label_names)
    examples = align_labels(examples, loaded.label_names)  # gold labels numbered as the model's classes
    if target in ("predicted", "gold"):
        check_target(examples, str(target), Classifier(loaded, head_type=head_type).head.kind)
        targets = [example.label if target == "gold" else None for example in examples]
    else:
        targets = [class_index(target, loaded.label_names)] * len(examples)
    clf, masked_lm = _explainer(loaded, keys, mlm, batch_size, head_type, autocast, device)
    resources, found = Resources.saved(), dict[int, Explanation]()
    lengths = [clf.token_count(example) for example in examples]
    for indices in length_groups(range(len(examples)), lengths, DEFAULT_GROUP):
        done, size = len(found), len(indices)

        def step(fraction: float, message: str, done: int = done, size: int = size) -> None:
            if progress is not None:
                where = f"examples {done + 1}-{done + size} of {len(examples)}"
                progress((done + fraction * size) / len(examples), f"{where}: {message}")

        explained = explain_examples(
            clf, [examples[i] for i in indices], keys, targets=[targets[i] for i in indices], params=overrides,
            seed=seed, mlm=masked_lm, progress=step, resources=resources,
        )  # fmt: skip
        found.update(zip(indices, explained, strict=True))
    return ExplanationResults(
        ExplanationResult(loaded.name, loaded.label_names, found[i]) for i in range(len(examples))
    )


def evaluate(
    model: Any,
    dataset: Dataset | str | Iterable[Example | str],
    methods: str | Sequence[str] = DEFAULT_METHODS,
    metrics: str | Sequence[str] = DEFAULT_METRICS,
    *,
    target: str = "predicted",
    split: str | None = None,
    limit: int | None = None,
    text_column: str = "text",
    text_pair_column: str | None = None,
    label_column: str | None = "label",
    params: Mapping[str, Mapping[str, Any]] | None = None,
    seed: int | None = None,
    mlm: str | MaskedLM = DEFAULT_MLM,
    tokenizer: Any = None,
    device: str | torch.device | None = None,
    batch_size: int = 64,
    progress: ProgressFn | None = None,
    head_type: str | None = None,
    autocast: str | None = None,
) -> EvaluationResult:
    """Explain every example of ``dataset`` with ``methods`` and score every attribution with
    ``metrics`` (the engine's ``evaluate_slice``, as ``python -m cli evaluate`` does).
    ``methods`` as for ``explain``, but ``"default"`` here is ``DEFAULT_METHODS``, the methods
    run when ``methods`` is left out (``"panel"`` is the heatmap page's seven).

    ``dataset`` is a ``datasets.Dataset`` (the text in ``text_column``, the second segment of a
    pair in ``text_pair_column``, an integer or ``ClassLabel`` label in ``label_column``, None for
    no label), a bundled dataset name with ``split`` (``python -m cli datasets`` lists them), or
    ``Example``s and texts (a text read as ``explain`` reads one, id ``text/<index>``). ``limit``
    keeps the first examples. ``target`` is ``"predicted"`` or ``"gold"`` (the label; MaRC's
    protocol). ``params`` maps method and metric keys to overrides; ``autocast`` as for
    ``explain``. No methods or no metrics are refused (``ValueError``), as ``explain`` refuses."""
    if target not in ("predicted", "gold"):
        raise ValueError(f"target must be 'predicted' or 'gold', got {target!r}")
    _check_batch_size(batch_size)
    check_seed(seed)
    keys = _method_keys(methods, DEFAULT_METHODS)
    metric_keys = _metric_keys(metrics)
    overrides = _overrides(params)
    unknown = set(overrides) - set(keys) - set(metric_keys)
    if unknown:
        raise ValueError(f"params for methods or metrics not requested: {', '.join(sorted(unknown))}")
    examples = read_examples(dataset, split, limit, (text_column, text_pair_column, label_column))
    loaded = load(model, tokenizer, device=device)
    warn_alignment(examples, loaded.label_names)  # evaluate_slice numbers them as the model's classes
    clf = Classifier(loaded, batch_size=batch_size, head_type=head_type, **autocast_options(autocast))
    params_by_metric = metric_params(_default_metrics(metrics, clf.head.kind), overrides)
    masked_lm = _masked_lm(mlm, device) if needs_mlm(keys, params_by_metric) else None
    evaluation = evaluate_slice(
        clf,
        examples,
        keys,
        params_by_metric,
        method_params={k: v for k, v in overrides.items() if k in keys},
        seed=seed,
        mlm=masked_lm,
        progress=progress,
        resources=Resources.saved(),
        target=target,
    )
    dropped = tuple(len(examples[r.position].words) - len(r.example.words) for r in evaluation.results)
    return EvaluationResult(loaded.name, evaluation, loaded.label_names, clf.head.kind, dropped)


def _on_device(loaded: LoadedClassifier, device: str | torch.device) -> bool:
    """Whether ``loaded``'s weights are on ``device`` ("cuda" means any CUDA device, "cuda:1" that
    one; a model loaded on "cuda" has its weights on "cuda:0"; a CPU is one device)."""
    asked = chosen_device(device)
    actual = next(loaded.model.parameters()).device
    return asked.type == actual.type and (asked.type == "cpu" or asked.index in (None, actual.index))


def _checked_methods(
    methods: str | Sequence[str], params: Mapping[str, Mapping[str, Any]] | None, batch_size: Any
) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The method keys and their parameter overrides of ``explain`` and ``explain_many``, checked
    before any model is loaded: params of methods not requested and a bad batch size are refused."""
    keys = _method_keys(methods, "panel")
    overrides = _overrides(params)
    unknown = set(overrides) - set(keys)
    if unknown:
        raise ValueError(f"params for methods not requested: {', '.join(sorted(unknown))}")
    _check_batch_size(batch_size)
    return keys, overrides


def _explainer(
    loaded: LoadedClassifier,
    keys: Sequence[str],
    mlm: str | MaskedLM,
    batch_size: int,
    head_type: str | None,
    autocast: str | None,
    device: str | torch.device | None,
) -> tuple[Classifier, MaskedLM | None]:
    """This request's classifier over the shared model, and the masked LM when a method needs
    one."""
    clf = Classifier(loaded, batch_size=batch_size, head_type=head_type, **autocast_options(autocast))
    return clf, _masked_lm(mlm, device) if any(explainers.get(k).needs_mlm for k in keys) else None


def _method_keys(methods: str | Sequence[str], default: str | Sequence[str]) -> list[str]:
    """The validated method keys, ``"default"`` being the calling function's ``default``; none is
    refused, as the command line refuses it (an empty result)."""
    keys = explainers.resolve(methods, default)
    if not keys:
        raise ValueError(f"no methods in {methods!r}: name at least one method key, 'default', 'panel' or 'all'")
    return keys


def _default_metrics(metrics: str | Sequence[str], head: str | None) -> list[str]:
    """The validated metric keys; the defaults (``metrics`` left as ``DEFAULT_METRICS``) fitted to
    a ``head`` of that kind, as the command line fits them (``engine.evaluate.head_defaults``)."""
    keys = _metric_keys(metrics)
    return head_defaults(keys, head) if metrics == DEFAULT_METRICS else keys


def _metric_keys(metrics: str | Sequence[str]) -> list[str]:
    """The validated metric keys (``"all"``, comma-separated keys or a list of keys); none is
    refused, as for methods."""
    if not isinstance(metrics, str) and (
        not isinstance(metrics, Sequence) or not all(isinstance(key, str) for key in metrics)
    ):
        raise ValueError(f"metrics must be metric keys (a list or comma-separated) or 'all', got {metrics!r:.80}")
    keys = resolve_metrics(metrics if isinstance(metrics, str) else ",".join(metrics))
    if not keys:
        raise ValueError(f"no metrics in {metrics!r}: name at least one metric key or 'all'")
    return keys


def _overrides(params: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """Each method's or metric's parameter overrides as a dict; overrides that are no mapping are
    refused."""
    if params is not None and not isinstance(params, Mapping):
        raise ValueError(f"params must map method or metric keys to their parameters, got {params!r:.80}")
    overrides = {}
    for key, value in (params or {}).items():
        if not isinstance(value, Mapping):
            raise ValueError(  # noqa: TRY004
                "each method's (or metric's) params must be a mapping of parameter names to values, "
                f"got params[{key!r}] = {value!r:.80}"
            )
        overrides[key] = dict(value)
    return overrides


def _check_batch_size(batch_size: Any) -> None:
    if not is_count(batch_size):
        raise ValueError(f"batch_size must be a whole number of 1 or more, got {batch_size!r}")


def _masked_lm(mlm: str | MaskedLM, device: str | torch.device | None) -> MaskedLM:
    return mlm if isinstance(mlm, MaskedLM) else MaskedLM.load(mlm, device)


__all__ = [
    "Attribution",
    "ComparisonResult",
    "EvaluationResult",
    "Example",
    "ExplanationResult",
    "ExplanationResults",
    "compare",
    "evaluate",
    "examples_from_dataset",
    "explain",
    "explain_many",
    "load",
    "open_run",
    "run",
    "runs",
]
