"""AML, Attributive Masking Learning (Barkan et al. 2024, "LLM Explainability via Attributive
Masking Learning").

An attribution model (an encoder of the classifier's family plus a per-token head d -> d -> 1,
tanh then sigmoid; explainers/aml/model.py) reads the input and the classifier's prediction and
outputs a mask ``a`` in [0, 1] per token; the classifier sees ``a * x + (1 - a) * [MASK]`` and
``(1 - a) * x + a * [MASK]``. Its loss is ``w_p * CE(F(masked), y) + w_a * mean(-log(1 - a))
+ w_inv * -log(1 - F(complement)[y])``. pAML trains it once per classifier on a slice of
training data (explainers/aml/pretrain.py; the model and data come from the caller's
``AmlResources``) and explains in one forward pass; fAML fine-tunes a copy on the single example
for a few steps and keeps the step whose map scores best on a faithfulness metric
(``select_by``). The shared classifier is never modified; the trace is reported in ``extras``.

Several examples are explained at once (``explain_aml_batch``, the registry's batch function):
each is fine-tuned on a copy of its own, the copies' parameters stacked and run as one model with
``torch.func.vmap``, so a step is one attribution-model pass and one classifier pass for all.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, vmap
from torch.nn.attention import SDPBackend, sdpa_kernel

from core.classifier import Classifier, ProgressFn
from core.encoding import Encoded, Variant, length_chunks, token_texts
from core.types import Attribution, Example
from explainers._masking import Batch, groups, span_extras, special_embedding, trace_row
from explainers.aml.model import (
    AmlParams,
    AttributionModel,
    aml_step,
    apply_gradients,
    make_optimizer,
    mean_word_mask,
)
from explainers.aml.pretrain import (
    FALLBACK_SOURCE,
    PRETRAIN_FIELDS,
    AmlResources,
    OnTheExample,
    PretrainedAml,
    pretrain_aml,
    select_training_examples,
)
from explainers.base import Steps, make_attribution, one_example

# AML's selection metrics: ERASER's comprehensiveness / sufficiency at 20 % and AOPC over these bins.
_AOPC_BINS = (1, 5, 10, 20, 50)
# Costs in units of one batch-2 forward+backward pass of the classifier (`python -m cli bench`,
# BENCHMARKS.md): an fAML step also runs the attribution encoder (same size) and its selection;
# pAML pre-training costs about 1.6 such passes per training example and epoch.
STEP_COST = 4.0
PRETRAIN_COST = 1.6
# At most this many fine-tuned copies at once: each holds the trainable parameters with their
# gradient and two AdamW moments (about 180 MB for MiniLM's 11 M trainable parameters).
_MAX_COPIES = 8


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


def _select_steps(
    clf: Classifier,
    encodings: list[Encoded],
    owners: list[int],
    maps: list[list[np.ndarray]],
    targets: list[int],
    select_by: str,
) -> list[tuple[int, list[float]]]:
    """Per example: (best step, metric per step). One scorer call scores every step's variants of
    every example (each charged to its example); ties go to the earliest step."""
    per_owner = [[] for _ in range(max(owners) + 1)]
    for encoded, owner, steps in zip(encodings, owners, maps):
        per_owner[owner] = [encoded.variant] + [v for m in steps for v in _selection_variants(encoded, m, select_by)]
    outputs = clf.predict_proba_groups(per_owner)
    out = []
    for owner, steps, target in zip(owners, maps, targets):
        own = outputs[owner][:, target]
        full, rest = own[0], own[1:].reshape(len(steps), -1)
        values = (full - rest).mean(1)  # comprehensiveness or sufficiency, averaged over bins
        best = int(np.argmin(values) if select_by == "sufficiency" else np.argmax(values))
        out.append((best, [float(v) for v in values]))
    return out


def _word_scores(encoded: Encoded, token_mask: np.ndarray) -> np.ndarray:
    """A word's score is the largest mask value of its subwords (AML's many-to-one rule)."""
    scores = np.zeros(encoded.n_words)
    for w in range(encoded.n_words):
        scores[w] = token_mask[encoded.word_positions(w)].max()
    return scores


def _stacked(p: torch.Tensor, count: int, *, transposed: bool) -> torch.Tensor:
    """``count`` trainable copies of ``p`` stacked on a first axis. A linear layer's weight is laid
    out transposed in memory, as its gradient comes back under ``vmap``: the optimiser then steps
    without re-laying out the gradient (``apply_gradients``), and the batched products run faster
    (8.0 against 5.9 ms for a forward and backward of 8 copies of a 1536 x 384 layer, 2 CPU
    cores)."""
    if not transposed:
        return p.detach().expand(count, *p.shape).clone().requires_grad_(True)
    return p.detach().t().contiguous().unsqueeze(0).repeat(count, 1, 1).transpose(1, 2).requires_grad_(True)


class _Copies:
    """``count`` copies of a pre-trained attribution model whose trainable parameters (all but the
    frozen word and class embeddings) are stacked along a first axis, run as one model with
    ``torch.func.vmap``: copy ``i`` reads row ``i`` of the batch. A single copy (one example, as the
    app explains) is a plain clone of those parameters called without ``vmap``, which spares it the
    batched products and lets its attention use the fused kernel. Fine-tuning the stack with AdamW
    (elementwise) fine-tunes every copy on its own example, as separate copies would. The parameters
    are swapped in on a structural copy of the model that shares its tensors, so the cached
    pre-trained model, which other requests may be reading, is never touched."""

    def __init__(self, model: AttributionModel, count: int) -> None:
        tensors = [*model.parameters(), *model.buffers()]
        self.model = copy.deepcopy(model, memo={id(t): t for t in tensors})
        frozen = {id(model.backbone.get_input_embeddings().weight), id(model.class_embeddings)}
        linear = {f"{name}.weight" for name, module in model.named_modules() if isinstance(module, nn.Linear)}
        self.stacked = count > 1
        self.weights = {
            name: _stacked(p, count, transposed=name in linear)
            if self.stacked
            else p.detach().clone().requires_grad_(True)
            for name, p in model.named_parameters()
            if id(p) not in frozen
        }

    def masks(self, batch: Batch, condition: torch.Tensor) -> torch.Tensor:
        """(count, seq) masks: copy ``i`` on row ``i``."""
        if not self.stacked:  # one copy: a plain call, which keeps the fused attention kernel
            inputs = (batch.input_ids, batch.attention_mask, batch.token_type_ids, condition)
            return functional_call(self.model, self.weights, inputs)

        def one(weights, ids, attention, types, y):
            return functional_call(self.model, weights, (ids[None], attention[None], types[None], y[None]))[0]

        with sdpa_kernel(SDPBackend.MATH):  # the fused CPU kernel has no batching rule
            return vmap(one)(self.weights, batch.input_ids, batch.attention_mask, batch.token_type_ids, condition)

    def optimizer(self, lr: float) -> torch.optim.Optimizer:
        head = [p for name, p in self.weights.items() if name.startswith("head.")]
        encoder = [p for name, p in self.weights.items() if not name.startswith("head.")]
        return make_optimizer(head, encoder, lr)


def explain_aml_batch(
    clf: Classifier,
    examples: Sequence[Example],
    targets: Sequence[int],
    params: AmlParams,
    *,
    mlm=None,
    progress: ProgressFn | None = None,
    resources: AmlResources | None = None,
) -> list[Attribution]:
    """pAML (one forward pass of the pre-trained attribution model) or fAML (a copy fine-tuned on
    each example for ``n_steps``, keeping the best step by ``select_by``), on several examples. The
    pre-trained model comes from ``resources`` (``OnTheExample()`` when None: trained on each
    example, not cached). Examples sharing a pre-trained model are explained together, at most
    ``_MAX_COPIES`` at a time (and two classifier rows each within ``length_chunks``), each
    fine-tuned on a copy of its own (``_Copies``): one attribution-model pass and one classifier
    pass per step for the group, one scorer call for the step selection, each pass charged to its
    example. AML's loss (Eq. 4-7) is a cross-entropy over a softmax of exclusive classes, so a
    multi-label or regression head is refused."""
    if clf.head.kind != "single_label":
        raise ValueError(
            f"AML is defined for single-label (softmax) classifiers; {clf.name} has a {clf.head.kind} head"
        )

    def pretrain_progress(fraction: float, message: str) -> None:
        if progress is not None:
            progress(0.8 * fraction, message)

    source = resources or OnTheExample()
    pretrained = [source.pretrained(clf, example, params, pretrain_progress) for example in examples]
    by_model: dict[int, list[int]] = {}
    for index, p in enumerate(pretrained):
        by_model.setdefault(id(p.model), []).append(index)
    widths = [len(clf.encode(example).input_ids) for example in examples]
    parts = [  # two classifier rows per example: half the batch size in examples (and half its tokens)
        [indices[chunk[i]] for i in part]
        for indices in by_model.values()
        for chunk in length_chunks([widths[i] for i in indices], clf.batch_size // 2)
        for part in groups(len(chunk), _MAX_COPIES)
    ]
    out: dict[int, Attribution] = {}
    for number, part in enumerate(parts):

        def step(fraction: float, message: str, number: int = number) -> None:
            if progress is not None:
                progress(0.8 + 0.2 * (number + fraction) / len(parts), message)

        chosen = [examples[i] for i in part]
        attributions = _explain_group(clf, chosen, part, [targets[i] for i in part], params, pretrained[part[0]], step)
        out.update(zip(part, attributions))
    return [out[i] for i in range(len(examples))]


def _explain_group(
    clf: Classifier,
    examples: list[Example],
    owners: list[int],
    targets: list[int],
    params: AmlParams,
    pretrained: PretrainedAml,
    progress: ProgressFn,
) -> list[Attribution]:
    encodings = [clf.encode(example) for example in examples]
    predicted: list[list[Variant]] = [[] for _ in range(max(owners) + 1)]
    for owner, encoded in zip(owners, encodings):
        predicted[owner] = [encoded.variant]
    outputs = clf.predict_proba_groups(predicted)
    probs = [outputs[owner][0] for owner in owners]
    # y: the predicted distribution when explaining the predicted class (the paper), else one-hot.
    condition = np.stack([p if int(np.argmax(p)) == t else np.eye(clf.num_labels)[t] for p, t in zip(probs, targets)])
    condition_t = torch.tensor(condition, dtype=torch.float32, device=clf.device)
    batch = Batch.of(encodings, clf.tokenizer.pad_token_id or 0, clf.device)
    variants = [e.variant for e in encodings] * 2  # masked rows, then complement rows

    def logits_fn(embeds: torch.Tensor) -> torch.Tensor:
        return clf.forward_embeds(embeds, variants, owners=owners * 2).float()

    fill = special_embedding(clf, ("mask", "unk"))
    fine_tune = params.mode == "fine_tune"
    n_steps = params.n_steps if fine_tune else 0
    count = len(examples)

    traces: list[dict[str, list[float]]] = [{} for _ in examples]
    maps: list[list[np.ndarray]] = [[] for _ in examples]
    copies = _Copies(pretrained.model, count) if fine_tune else None
    optimizer = copies.optimizer(params.lr) if copies is not None else None
    with torch.enable_grad():
        for step in range(n_steps + 1):
            with torch.set_grad_enabled(step < n_steps):  # the last map is only evaluated
                a = (
                    copies.masks(batch, condition_t)
                    if copies is not None
                    else pretrained.model(batch.input_ids, batch.attention_mask, batch.token_type_ids, condition_t)
                )
                result = aml_step(clf, a, batch, condition_t, params, logits_fn, fill)
            for i, encoded in enumerate(encodings):
                length = len(encoded.input_ids)
                maps[i].append(result.mask[i, :length].detach().cpu().double().numpy())
                own_mask = mean_word_mask(result.mask[i, :length], batch.word_flags[i, :length])
                trace_row(traces[i], step=step, **result.row(i), mean_mask=own_mask)
            if step < n_steps and optimizer is not None:
                apply_gradients(result.total.sum(), optimizer)  # the sum: each copy gets its own example's gradient
                optimizer.zero_grad(set_to_none=True)
            progress((step + 1) / (n_steps + 1), f"fine-tuning step {step}/{n_steps}")
    word_maps = [[_word_scores(encoded, m) for m in steps] for encoded, steps in zip(encodings, maps)]
    selections: list[tuple[int, list[float]]] = [(0, [])] * count
    if fine_tune and n_steps > 0:
        if params.select_by == "loss":
            selections = [(int(np.argmin(trace["loss"])), []) for trace in traces]
        else:
            selections = _select_steps(clf, encodings, owners, word_maps, targets, params.select_by)
            for trace, (_, values) in zip(traces, selections):
                trace["selection_metric"] = values
    out = []
    for example, target, encoded, steps, own, trace, (selected, _) in zip(
        examples, targets, encodings, word_maps, maps, traces, selections
    ):
        scores = steps[selected]
        positions = encoded.scored_positions
        extras = {
            "trace": trace,
            "trace_terms": ["prediction", "sparsity", "inverse"],
            "mode": params.mode,
            "selected_step": selected,
            "select_by": params.select_by if fine_tune else None,
            "pretraining": pretrained.summary(),
            # The attribution encoder (the classifier's size) runs once per step as well: passes
            # the classifier's counters do not see, which the benchmark's floor adds.
            "encoder_forward_passes": n_steps + 1,
            "encoder_backward_passes": n_steps,
            **span_extras(scores, 0.5),
        }
        out.append(
            make_attribution(
                example,
                target,
                scores,
                subwords=token_texts(clf.tokenizer, [encoded.input_ids[t] for t in positions]),
                subword_scores=own[selected][positions],
                subword_word_ids=tuple(encoded.word_ids[t] for t in positions),
                extras=extras,
            )
        )
    return out


# pAML or fAML on one example (``explain_aml_batch``).
explain_aml = one_example(explain_aml_batch)


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
    "explain_aml_batch",
    "pretrain_aml",
    "select_training_examples",
    "steps",
]
