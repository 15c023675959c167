"""AML, Attributive Masking Learning (Barkan et al. 2024, "LLM Explainability via Attributive
Masking Learning", paper 004).

An attribution model (an encoder of the classifier's family plus a per-token head d -> d -> 1,
tanh then sigmoid; explainers/aml/model.py) reads the input and the classifier's prediction and
outputs a mask ``a`` in [0, 1] per token; the classifier sees ``a * x + (1 - a) * [MASK]`` and
``(1 - a) * x + a * [MASK]``. Its loss is ``w_p * CE(F(masked), y) + w_a * mean(-log(1 - a))
+ w_inv * -log(1 - F(complement)[y])``. pAML trains it once per classifier on a slice of
training data (explainers/aml/pretrain.py; the model and data come from the caller's
``AmlResources``) and explains in one forward pass; fAML fine-tunes a copy on the single example
for a few steps and keeps the step whose map scores best on a faithfulness metric
(``select_by``). The shared classifier is never modified; the trace is reported in ``extras``.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from core.classifier import Classifier, Encoded, ProgressFn, Variant
from core.types import Attribution, Example
from explainers._masking import rng_devices, span_extras, special_embedding, trace_row
from explainers.aml.model import AmlParams, Batch, aml_step, apply_gradients, make_optimizer, mean_word_mask
from explainers.aml.pretrain import (
    FALLBACK_SOURCE,
    PRETRAIN_FIELDS,
    AmlResources,
    OnTheExample,
    PretrainedAml,
    pretrain_aml,
    select_training_examples,
)
from explainers.base import Steps, make_attribution

# AML's selection metrics: ERASER's comprehensiveness / sufficiency at 20 % and AOPC over these bins.
_AOPC_BINS = (1, 5, 10, 20, 50)
# Costs in units of one batch-2 forward+backward pass of the classifier (`python -m cli bench`,
# BENCHMARKS.md): an fAML step also runs the attribution encoder (same size) and its selection;
# pAML pre-training costs about 1.6 such passes per training example and epoch.
STEP_COST = 4.0
PRETRAIN_COST = 1.6


def _top_words(scores: np.ndarray, count: int) -> list[int]:
    return [int(i) for i in np.argsort(-scores, kind="stable")[:count]]


def _selection_variants(encoded: Encoded, scores: np.ndarray, select_by: str) -> list[Variant]:
    """Variants whose probabilities give the selection metric: top words deleted (comprehensiveness)
    or only the top words kept (sufficiency), at 20 % or at every AOPC bin."""
    n = encoded.n_words
    bins = _AOPC_BINS if select_by == "aopc_comprehensiveness" else (20,)
    variants = []
    for k in bins:
        top = _top_words(scores, max(1, n * k // 100))
        removed = top if select_by != "sufficiency" else sorted(set(range(n)) - set(top))
        variants.append(encoded.perturb(replace_words={w: () for w in removed}))
    return variants


def _select_step(
    clf: Classifier, encoded: Encoded, maps: list[np.ndarray], target: int, select_by: str
) -> tuple[int, list[float]]:
    """(best step, metric per step): one batch scores every step's variants; ties go to the earliest step."""
    per_map = [_selection_variants(encoded, m, select_by) for m in maps]
    probs = clf.predict_proba([encoded.variant] + [v for vs in per_map for v in vs])[:, target]
    full, rest = probs[0], probs[1:].reshape(len(maps), -1)
    values = (full - rest).mean(1)  # comprehensiveness or sufficiency, averaged over bins
    best = int(np.argmin(values) if select_by == "sufficiency" else np.argmax(values))
    return best, [float(v) for v in values]


def _word_scores(encoded: Encoded, token_mask: np.ndarray) -> np.ndarray:
    """A word's score is the largest mask value of its subwords (AML's many-to-one rule)."""
    scores = np.zeros(encoded.n_words)
    for w in range(encoded.n_words):
        scores[w] = token_mask[encoded.word_positions(w)].max()
    return scores


def explain_aml(
    clf: Classifier,
    example: Example,
    target: int,
    params: AmlParams,
    *,
    mlm=None,
    progress: ProgressFn | None = None,
    resources: AmlResources | None = None,
) -> Attribution:
    """pAML (one forward pass of the pre-trained attribution model) or fAML (a copy fine-tuned on
    this example for ``n_steps``, keeping the best step by ``select_by``). The pre-trained model
    comes from ``resources`` (``OnTheExample()`` when None: trained on this example, not cached).
    AML's loss (Eq. 4-7) is a cross-entropy over a softmax of exclusive classes, so a multi-label
    or regression head is refused."""
    if clf.head.kind != "single_label":
        raise ValueError(
            f"AML is defined for single-label (softmax) classifiers; {clf.name} has a {clf.head.kind} head"
        )

    def pretrain_progress(fraction: float, message: str) -> None:
        if progress is not None:
            progress(0.8 * fraction, message)

    pretrained = (resources or OnTheExample()).pretrained(clf, example, params, pretrain_progress)
    encoded = clf.encode(example)
    probs = clf.predict_proba([encoded.variant])[0]
    # y: the predicted distribution when explaining the predicted class (the paper), else one-hot.
    condition = probs if int(np.argmax(probs)) == target else np.eye(clf.num_labels)[target]
    condition_t = torch.tensor(condition[None], dtype=torch.float32, device=clf.device)
    batch = Batch.of([encoded], clf.tokenizer.pad_token_id or 0, clf.device)
    fill = special_embedding(clf, ("mask", "unk"))
    fine_tune = params.mode == "fine_tune"
    n_steps = params.n_steps if fine_tune else 0

    def logits_fn(embeds: torch.Tensor) -> torch.Tensor:
        return clf.forward_embeds(embeds, encoded.variant).float()

    trace: dict[str, list[float]] = {}
    maps: list[np.ndarray] = []
    with torch.random.fork_rng(devices=rng_devices(clf)), torch.enable_grad():
        torch.manual_seed(params.seed)
        model = copy.deepcopy(pretrained.model) if fine_tune else pretrained.model
        if fine_tune:
            for p in model.parameters():
                p.requires_grad_(
                    p is not model.backbone.get_input_embeddings().weight and p is not model.class_embeddings
                )
            optimizer = make_optimizer(model, params.lr, train_classes=False)
        for step in range(n_steps + 1):
            with torch.set_grad_enabled(step < n_steps):  # the last map is only evaluated
                result = aml_step(clf, model, batch, condition_t, params, logits_fn, fill)
            maps.append(result.mask[0].detach().cpu().double().numpy())
            trace_row(trace, step=step, **result.row(), mean_mask=mean_word_mask(result.mask, batch.word_flags))
            if step < n_steps:
                apply_gradients(result.loss, optimizer)
                optimizer.zero_grad(set_to_none=True)
            if progress is not None:
                progress(0.8 + 0.2 * (step + 1) / (n_steps + 1), f"fine-tuning step {step}/{n_steps}")
    word_maps = [_word_scores(encoded, m) for m in maps]
    selected = 0
    if fine_tune and n_steps > 0:
        if params.select_by == "loss":
            selected = int(np.argmin(trace["loss"]))
        else:
            selected, values = _select_step(clf, encoded, word_maps, target, params.select_by)
            trace["selection_metric"] = values
    scores = word_maps[selected]
    positions = encoded.scored_positions
    extras = {
        "trace": trace,
        "trace_terms": ["prediction", "sparsity", "inverse"],
        "mode": params.mode,
        "selected_step": selected,
        "select_by": params.select_by if fine_tune else None,
        "pretraining": pretrained.summary(),
        **span_extras(scores, 0.5),
    }
    return make_attribution(
        example,
        target,
        scores,
        subwords=tuple(clf.tokenizer.convert_ids_to_tokens([encoded.input_ids[t] for t in positions])),
        subword_scores=maps[selected][positions],
        subword_word_ids=tuple(encoded.word_ids[t] for t in positions),
        extras=extras,
    )


# Per-step costs in units of one batch-2 forward+backward pass of the classifier, calibrated with


def steps(params: AmlParams) -> Steps:
    """Cost model: fAML's fine-tuning steps plus one pass, and pAML's one-off pre-training."""
    finetune = (params.n_steps if params.mode == "fine_tune" else 0) * STEP_COST + 1.0
    return Steps(
        run=finetune,
        pretrain=params.n_train * params.n_epochs * PRETRAIN_COST,
        note=f"pre-training on {params.n_train} examples once per model",
    )


__all__ = [
    "FALLBACK_SOURCE",
    "PRETRAIN_FIELDS",
    "AmlParams",
    "AmlResources",
    "OnTheExample",
    "PretrainedAml",
    "explain_aml",
    "pretrain_aml",
    "select_training_examples",
    "steps",
]
