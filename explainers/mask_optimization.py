"""Explanations learned as a soft mask over the input: MaRC (paper 003) and AML (paper 004).

* ``marc``: Brinner & Zarrieß, "Model Interpretability and Rationale Extraction by Input Mask
  Optimization". One mask value per word (a word's subwords share it), parameterised by Gaussian
  spans: word ``i`` carries a weight ``w_i`` and a width ``s_i``, and the mask of word ``j`` is
  ``sigmoid(sum_i w_i exp(-(i-j)^2 / s_i))`` (``s_i^2`` in the authors' code, a parameter). The
  word embeddings are blended toward the [PAD] embedding, ``mask * x + (1 - mask) * pad``, and
  Adam minimises ``-score(c | masked) + complement term + alpha_mask * mean(mask)^2
  - alpha_width * mean(log s)``, with Gaussian noise on the blended embeddings and random 0/1
  flips of a few mask values at every step. The continuous mask is the attribution; the words
  whose mask exceeds ``span_threshold`` form the rationale spans.
* ``aml``: Barkan et al., "LLM Explainability via Attributive Masking Learning". An attribution
  model (an encoder of the classifier's family plus a per-token head d -> d -> 1, tanh then
  sigmoid) reads the input and the classifier's prediction and outputs a mask ``a`` in [0, 1]
  per token; the classifier sees ``a * x + (1 - a) * [MASK]`` and ``(1 - a) * x + a * [MASK]``.
  Its loss is ``w_p * CE(F(masked), y) + w_a * mean(-log(1 - a)) + w_inv * -log(1 - F(complement)[y])``.
  pAML trains it once per classifier on a slice of training data and explains in one forward
  pass; fAML fine-tunes a copy on the single example for a few steps and keeps the step whose
  map scores best on a faithfulness metric (``select_by``).

The shared classifier is never modified: its parameters are frozen, the optimised tensors are the
mask parameters (MaRC) or a private attribution model (AML), and gradients are taken with
``torch.autograd.grad``. Both report their optimisation trace in ``extras``.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from core.classifier import Classifier, Encoded, ProgressFn, Variant
from core.params import param
from core.types import Attribution, Example
from explainers.base import Steps, make_attribution

# MaRC's early-stop rule (authors' code): checked every 50 steps, on the change of the mean mask.
_STOP_EVERY = 50
_STOP_MIN_STEP = 199
_MIN_WIDTH = 0.05
_EPS = 1e-6

# AML's selection metrics: ERASER's comprehensiveness / sufficiency at 20 % and AOPC over these bins.
_AOPC_BINS = (1, 5, 10, 20, 50)
_HEAD_LR_FACTOR = 10.0
_MAX_TRAIN_TOKENS = 128


# =========================================================================== shared helpers


def _trace_row(trace: dict[str, list[float]], **values: float) -> None:
    for key, value in values.items():
        trace.setdefault(key, []).append(float(value))


def rationale_spans(mask: np.ndarray, threshold: float) -> list[tuple[int, int]]:
    """Maximal runs of words whose mask is at least ``threshold``, as ``(start, end)`` (end exclusive)."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for i, value in enumerate(np.asarray(mask)):
        if value >= threshold and start is None:
            start = i
        elif value < threshold and start is not None:
            spans.append((start, i))
            start = None
    if start is not None:
        spans.append((start, len(mask)))
    return spans


def _span_extras(mask: np.ndarray, threshold: float) -> dict[str, Any]:
    spans = rationale_spans(mask, threshold)
    rationale = np.zeros(len(mask), dtype=int)
    for start, end in spans:
        rationale[start:end] = 1
    return {"rationale": rationale.tolist(), "rationale_spans": [list(s) for s in spans], "span_threshold": threshold}


def _token_word_index(encoded: Encoded, device: torch.device) -> torch.Tensor:
    """(seq,) word index of each token, ``n_words`` for special tokens (they index a constant 1)."""
    return torch.tensor([encoded.n_words if w is None else w for w in encoded.word_ids], device=device)


def _embed_ids(clf: Classifier, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return clf.input_embeddings(torch.tensor([ids])).detach()  # (1, len(ids), dim)


def _special_embedding(clf: Classifier, choices: tuple[str, ...]) -> torch.Tensor:
    """(dim,) input embedding of the first special token of ``choices`` the tokenizer has."""
    for name in choices:
        token = clf.special_tokens[name]
        if token is not None:
            return _embed_ids(clf, [token])[0, 0]
    raise ValueError(f"{clf.name} has none of the tokens {', '.join(f'[{c.upper()}]' for c in choices)}")


def _blend(embeds: torch.Tensor, fill: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """``keep * embeds + (1 - keep) * fill``; embeds (..., seq, dim), keep (..., seq), fill (dim,)."""
    keep = keep.unsqueeze(-1)
    return keep * embeds + (1 - keep) * fill


def _rng_devices(clf: Classifier) -> list[int]:
    return [clf.device.index or 0] if clf.device.type == "cuda" else []


# =========================================================================== MaRC


@dataclass(frozen=True)
class MarcParams:
    n_steps: int = param(300, "maximum optimisation steps (the authors' code allows 900)", min=1, max=5000)
    lr: float = param(0.03, "Adam learning rate of the span weights and widths", min=1e-5, max=1.0)
    alpha_mask: float = param(1.0, "weight of the sparsity term (mean mask)^2", min=0.0, max=100.0)
    alpha_width: float = param(1.2, "weight of the span-width reward -mean(log width)", min=0.0, max=100.0)
    init_weight: float = param(1.2, "initial span weight of every word", min=-10.0, max=10.0)
    init_width: float = param(2.0, "initial span width of every word", min=0.1, max=100.0)
    kernel: str = param(
        "sigma",
        "Gaussian spread exp(-d^2/s) as printed in the paper or exp(-d^2/s^2) as in the authors' code",
        choices=("sigma", "sigma_squared"),
    )
    score: str = param(
        "log_softmax",
        "class score: log-likelihood (class-discriminative), log-sigmoid of the logit "
        "(class-indicative) or log(0.9 sigmoid + 0.1 softmax)",
        choices=("log_softmax", "log_sigmoid", "mixed"),
    )
    complement: str = param(
        "log_one_minus",
        "complement term: -log(1 - p(c | complement)) as in the authors' code, "
        "+log p(c | complement) as in Eq. 4, or none (ablation)",
        choices=("log_one_minus", "log_prob", "none"),
    )
    noise_std: float = param(
        0.03, "std of the Gaussian noise on the blended embeddings, relative to the embeddings' std", min=0.0, max=1.0
    )
    flip_fraction: float = param(
        0.05, "fraction of mask values set to 0 (and, independently, to 1) per step", min=0.0, max=0.5
    )
    early_stop: bool = param(True, "stop when the mean mask settles (the authors' rule, checked every 50 steps)")
    span_threshold: float = param(0.5, "mask value from which a word belongs to a rationale span", min=0.0, max=1.0)
    seed: int = param(0, "random seed of the noise and the flips")


def _class_prob(logits: torch.Tensor, target: int, score: str) -> torch.Tensor:
    """(batch,) probability-like value of the target under the scoring function."""
    if score == "log_softmax":
        return torch.softmax(logits, -1)[:, target]
    if score == "log_sigmoid":
        return torch.sigmoid(logits[:, target])
    return 0.9 * torch.sigmoid(logits[:, target]) + 0.1 * torch.softmax(logits, -1)[:, target]


def _class_log_score(logits: torch.Tensor, target: int, score: str) -> torch.Tensor:
    if score == "log_softmax":
        return torch.log_softmax(logits, -1)[:, target]
    if score == "log_sigmoid":
        return nn.functional.logsigmoid(logits[:, target])
    return torch.log(_class_prob(logits, target, score).clamp_min(_EPS))


def _complement_term(logits: torch.Tensor, target: int, score: str, complement: str) -> torch.Tensor:
    if complement == "none":
        return logits.new_zeros(())
    if complement == "log_prob":
        return _class_log_score(logits, target, score)[0]
    return -torch.log1p(-_class_prob(logits, target, score)[0].clamp(max=1 - _EPS))


def span_mask(weights: torch.Tensor, widths: torch.Tensor, kernel: str) -> torch.Tensor:
    """MaRC's Gaussian span parameterisation (Eq. 5-6): (n,) weights and widths -> (n,) mask in (0, 1)."""
    positions = torch.arange(len(weights), device=weights.device, dtype=weights.dtype)
    distance2 = (positions[None, :] - positions[:, None]) ** 2  # (source i, target j)
    scale = widths**2 if kernel == "sigma_squared" else widths
    spread = weights[:, None] * torch.exp(-distance2 / scale[:, None])
    return torch.sigmoid(spread.sum(0))


def _flip(mask: torch.Tensor, fraction: float, generator: torch.Generator) -> torch.Tensor:
    """Set a random ``fraction`` of values to 0 and, independently, to 1 (a value drawn by both stays)."""
    if fraction == 0:
        return mask
    draws = torch.rand((2, len(mask)), generator=generator).to(mask.device)
    to_zero, to_one = draws[0] < fraction, draws[1] < fraction
    mask = torch.where(to_zero & ~to_one, torch.zeros_like(mask), mask)
    return torch.where(to_one & ~to_zero, torch.ones_like(mask), mask)


def _should_stop(step: int, mean: float, previous: float) -> bool:
    change = abs(previous - mean)
    settled = change < 1 / 200 or (change < 1 / 80 and mean < 0.2)
    return settled and (step >= _STOP_MIN_STEP or mean < 0.3) and mean < 0.45


def explain_marc(
    clf: Classifier, example: Example, target: int, params: MarcParams, *, mlm=None, progress: ProgressFn | None = None
) -> Attribution:
    """MaRC: optimise per-word Gaussian-span mask parameters so the kept words alone keep the
    target class and the removed words alone lose it, with as little kept as possible."""
    encoded = clf.encode(example)
    device = clf.device
    generator = torch.Generator().manual_seed(params.seed)
    embeds = _embed_ids(clf, list(encoded.input_ids))[0]  # (seq, dim)
    pad = _special_embedding(clf, ("pad",))
    word_index = _token_word_index(encoded, device)
    words_only = embeds[word_index < encoded.n_words]
    noise_scale = params.noise_std * float(words_only.std()) if len(words_only) > 1 else params.noise_std

    weights = torch.full((encoded.n_words,), params.init_weight, device=device, requires_grad=True)
    widths = torch.full((encoded.n_words,), params.init_width, device=device, requires_grad=True)
    optimizer = torch.optim.Adam([weights, widths], lr=params.lr)
    trace: dict[str, list[float]] = {}
    previous_mean, stopped_at = 1.0, None
    with torch.enable_grad():
        for step in range(params.n_steps):
            mask = span_mask(weights, widths, params.kernel)  # (n_words,)
            mean = mask.detach().mean().item()
            if params.early_stop and step > 0 and step % _STOP_EVERY == 0:
                if _should_stop(step, mean, previous_mean):
                    stopped_at = step
                    break
                previous_mean = mean
            keep = torch.cat([_flip(mask, params.flip_fraction, generator), mask.new_ones(1)])[word_index]  # (seq,)
            batch = torch.stack([_blend(embeds, pad, keep), _blend(embeds, pad, 1 - keep)])  # (2, seq, dim)
            batch = batch + noise_scale * torch.randn(batch.shape, generator=generator).to(device)
            logits = clf.forward_embeds(batch, encoded.variant).float()
            sufficiency = -_class_log_score(logits[:1], target, params.score)[0]
            complement = _complement_term(logits[1:], target, params.score, params.complement)
            sparsity = params.alpha_mask * mask.mean() ** 2
            width = -params.alpha_width * torch.log(widths).mean()
            loss = sufficiency + complement + sparsity + width
            weights.grad, widths.grad = torch.autograd.grad(loss, [weights, widths])
            optimizer.step()
            with torch.no_grad():
                widths.clamp_(min=_MIN_WIDTH)
            probs = torch.softmax(logits.detach(), -1)[:, target]
            _trace_row(
                trace,
                step=step,
                loss=loss.item(),
                sufficiency=sufficiency.item(),
                complement=complement.item(),
                sparsity=sparsity.item(),
                width=width.item(),
                p_masked=probs[0].item(),
                p_complement=probs[1].item(),
                mean_mask=mean,
            )
            if progress is not None and (step % 10 == 0 or step == params.n_steps - 1):
                progress((step + 1) / params.n_steps, f"mask step {step + 1}/{params.n_steps}")
    with torch.no_grad():  # the final mask, without noise or flips, on the masked and the complement input
        mask = span_mask(weights, widths, params.kernel)
        keep = torch.cat([mask, mask.new_ones(1)])[word_index]
        logits = clf.forward_embeds(
            torch.stack([_blend(embeds, pad, keep), _blend(embeds, pad, 1 - keep)]), encoded.variant
        )
        final_probs = torch.softmax(logits.float(), -1)[:, target].tolist()
        final = mask.cpu().double().numpy()
    extras = {
        "trace": trace,
        "trace_terms": ["sufficiency", "complement", "sparsity", "width"],
        "n_steps_run": len(trace.get("step", [])),
        "early_stopped": stopped_at is not None,
        "p_masked": final_probs[0],
        "p_complement": final_probs[1],
        "widths": widths.detach().cpu().double().numpy().tolist(),
        **_span_extras(final, params.span_threshold),
    }
    return make_attribution(example, target, final, extras=extras)


# =========================================================================== AML: the attribution model


class _EmbeddingBackbone(nn.Module):
    """For classifiers without a transformer encoder (the toy bag-of-embeddings model): the
    hidden state of a token is its input embedding."""

    def __init__(self, embeddings: nn.Embedding) -> None:
        super().__init__()
        self.embeddings = embeddings

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings

    def forward(self, inputs_embeds: torch.Tensor, attention_mask=None, token_type_ids=None):
        from transformers.modeling_outputs import BaseModelOutput

        return BaseModelOutput(last_hidden_state=inputs_embeds)


def _backbone(clf: Classifier) -> tuple[nn.Module, str]:
    """The attribution model's encoder and where it came from.

    Bundled models: the packaged pre-trained MiniLM they were fine-tuned from (the paper's choice,
    the pre-trained, not fine-tuned, version of the explained architecture). Other transformers:
    a deep copy of the classifier's own encoder. Models without one: a copy of the embeddings.
    """
    from core.models import delta_folder, encoder_path

    if delta_folder(clf.name) is not None:
        from transformers import AutoModel

        return AutoModel.from_pretrained(encoder_path()), "packaged pre-trained MiniLM encoder"
    base = clf.model.base_model
    if base is not clf.model:
        return copy.deepcopy(base), f"copy of {clf.name}'s encoder"
    return _EmbeddingBackbone(copy.deepcopy(clf.embedding_layer())), f"copy of {clf.name}'s input embeddings"


class AttributionModel(nn.Module):
    """AML's G: encoder + shared per-token head (d -> d -> 1, tanh, sigmoid), conditioned on the
    class distribution ``y`` through ``z = z_0 + sum_j y_j z_j`` appended as one extra position."""

    def __init__(self, backbone: nn.Module, num_labels: int, max_length: int, uses_token_types: bool) -> None:
        super().__init__()
        self.backbone = backbone
        embeddings = backbone.get_input_embeddings()
        embeddings.weight.requires_grad_(False)  # frozen, as in the authors' code
        hidden = getattr(getattr(backbone, "config", None), "hidden_size", embeddings.embedding_dim)
        self.class_embeddings = nn.Parameter(0.02 * torch.randn(num_labels + 1, embeddings.embedding_dim))  # row 0: z_0
        self.dropout = nn.Dropout(0.1)
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.max_length = max_length
        self.uses_token_types = uses_token_types

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor,
        condition: torch.Tensor,
    ) -> torch.Tensor:
        """(batch, seq) ids, mask and types, (batch, n_labels) condition -> (batch, seq) mask in (0, 1)."""
        embeds = self.backbone.get_input_embeddings()(input_ids)  # (batch, seq, dim)
        z = self.class_embeddings[0] + condition @ self.class_embeddings[1:]  # (batch, dim)
        n, width = input_ids.shape
        lengths = attention_mask.sum(1)
        if width + 1 <= self.max_length:  # z after each row's last token
            rows = torch.arange(n, device=input_ids.device)
            embeds = torch.cat([embeds, embeds.new_zeros(n, 1, embeds.shape[-1])], 1).index_put((rows, lengths), z)
            attention_mask = torch.cat([attention_mask, attention_mask.new_zeros(n, 1)], 1).index_put(
                (rows, lengths), attention_mask.new_ones(n)
            )
            token_type_ids = torch.cat([token_type_ids, token_type_ids.new_zeros(n, 1)], 1)
        else:  # no free position: z is added to the first ([CLS]) embedding
            embeds = torch.cat([embeds[:, :1] + z[:, None], embeds[:, 1:]], 1)
        inputs = {"inputs_embeds": embeds, "attention_mask": attention_mask}
        if self.uses_token_types:
            inputs["token_type_ids"] = token_type_ids
        hidden = self.backbone(**inputs).last_hidden_state[:, :width]
        return torch.sigmoid(self.head(self.dropout(hidden)).squeeze(-1))


@dataclass(frozen=True)
class AmlParams:
    mode: str = param(
        "fine_tune",
        "fine_tune: fAML, the pre-trained model fine-tuned on this example for n_steps; "
        "pretrained: pAML, one forward pass of the pre-trained model",
        choices=("fine_tune", "pretrained"),
    )
    n_steps: int = param(5, "fAML fine-tuning steps (the authors' code: 5)", min=0, max=200)
    select_by: str = param(
        "aopc_comprehensiveness",
        "fAML keeps the step whose map scores best on this (deletion of the "
        "top words; AOPC over 1/5/10/20/50 %, or at 20 %) or has the lowest loss",
        choices=("aopc_comprehensiveness", "comprehensiveness", "sufficiency", "loss"),
    )
    weight_prediction: float = param(1.0, "weight of the prediction loss on the masked input", min=0.0, max=100.0)
    weight_sparsity: float = param(1.0, "weight of the sparsity loss -mean log(1 - a)", min=0.0, max=100.0)
    weight_inverse: float = param(
        1.0, "weight of the inverse-mask loss -log(1 - p(y | complement))", min=0.0, max=100.0
    )
    lr: float = param(1e-4, "AdamW learning rate of the encoder (the head learns 10x faster)", min=1e-7, max=1e-1)
    n_train: int = param(256, "pAML training examples (the paper: about 1,000)", min=1, max=100_000)
    n_epochs: int = param(1, "pAML training epochs (the authors' code: 5)", min=1, max=100)
    train_batch_size: int = param(16, "pAML training batch size", min=1, max=512)
    seed: int = param(0, "random seed of the training sample, the head's initialisation and dropout")


PRETRAIN_FIELDS = (
    "weight_prediction",
    "weight_sparsity",
    "weight_inverse",
    "lr",
    "n_train",
    "n_epochs",
    "train_batch_size",
    "seed",
)


@dataclass
class PretrainedAml:
    """A pre-trained attribution model with what it was trained on and its training trace."""

    model: AttributionModel
    backbone: str
    source: str
    n_examples: int
    runtime_s: float
    forward_passes: int
    backward_passes: int
    trace: dict[str, list[float]]

    def summary(self) -> dict[str, Any]:
        return {
            "backbone": self.backbone,
            "source": self.source,
            "on_explained_example": self.source == FALLBACK_SOURCE,
            "n_examples": self.n_examples,
            "runtime_s": self.runtime_s,
            "forward_passes": self.forward_passes,
            "backward_passes": self.backward_passes,
            "trace": self.trace,
        }


_SPLIT_PREFERENCE = ("train", "validation", "dev", "val", "dev_highlighted")


def training_split(clf: Classifier) -> tuple[str, str] | None:
    """(dataset, split) pAML trains on, or None: the dataset the classifier was trained for (its
    bundled card's ``dataset``, else its catalog entry's), first split present in the data folder
    among train / validation / dev / val / dev_highlighted."""
    from core import catalog, datasets
    from core.models import model_info

    entry = catalog.find(clf.name)
    dataset = model_info(clf.name).get("dataset") or (entry.dataset if entry is not None else None)
    if dataset not in datasets.DATASET_NAMES or dataset == "examples":
        return None
    splits = datasets.available_splits(dataset)
    split = next((s for s in _SPLIT_PREFERENCE if s in splits), None)
    return (dataset, split) if split is not None else None


# pAML's training source when no training split is found: the explained example, repeated.
FALLBACK_SOURCE = "the explained example"


def training_examples(clf: Classifier, example: Example, n_train: int, seed: int) -> tuple[list[Example], str]:
    """pAML's training slice and its name: a seeded random sample of ``n_train`` examples of at
    most 128 tokens from ``training_split``; without one (no data folder, no known dataset), the
    explained example itself repeated ``n_train`` times."""
    from core import datasets

    found = training_split(clf)
    if found is not None:
        pool = datasets.load_examples(*found)
        chosen: list[Example] = []
        for i in np.random.default_rng(seed).permutation(len(pool)):
            candidate = pool[int(i)]
            fits = clf.loaded.pair is None or candidate.is_pair == clf.loaded.pair
            if fits and len(clf.encode(clf.fit_example(candidate)[0]).input_ids) <= _MAX_TRAIN_TOKENS:
                chosen.append(candidate)
                if len(chosen) == n_train:
                    break
        if chosen:
            return chosen, "/".join(found)
    return [example] * n_train, FALLBACK_SOURCE


def _uses_token_types(model: nn.Module) -> bool:
    return getattr(getattr(model, "config", None), "type_vocab_size", 0) > 1


@dataclass(frozen=True)
class _Batch:
    """Padded encodings: ids, types, attention (1 on tokens) and word flags (1 on word tokens)."""

    input_ids: torch.Tensor
    token_type_ids: torch.Tensor
    attention_mask: torch.Tensor
    word_flags: torch.Tensor

    @staticmethod
    def of(encodings: list[Encoded], pad_id: int, device: torch.device) -> _Batch:
        width = max(len(e.input_ids) for e in encodings)
        ids = torch.full((len(encodings), width), pad_id, dtype=torch.long)
        types = torch.zeros_like(ids)
        attention = torch.zeros_like(ids)
        words = torch.zeros(ids.shape, dtype=torch.bool)
        for row, e in enumerate(encodings):
            n = len(e.input_ids)
            ids[row, :n] = torch.tensor(e.input_ids)
            types[row, :n] = torch.tensor(e.token_type_ids)
            attention[row, :n] = 1
            words[row, :n] = torch.tensor([w is not None for w in e.word_ids])
        return _Batch(ids.to(device), types.to(device), attention.to(device), words.to(device))

    def doubled(self) -> _Batch:
        """The batch stacked on itself (masked and complement inputs in one pass)."""
        return _Batch(*(torch.cat([t, t]) for t in dataclasses.astuple(self)))


def _classifier_logits(clf: Classifier, embeds: torch.Tensor, batch: _Batch) -> torch.Tensor:
    """``forward_embeds`` for a padded batch of different examples (counted the same way)."""
    inputs = {"inputs_embeds": embeds, "attention_mask": batch.attention_mask}
    if _uses_token_types(clf.model):
        inputs["token_type_ids"] = batch.token_type_ids
    clf.forward_passes += embeds.shape[0]
    if embeds.requires_grad:
        clf.backward_passes += embeds.shape[0]
    return clf.model(**inputs).logits.float()


@dataclass(frozen=True)
class _AmlStep:
    """One evaluation of AML's loss on a batch: the total, its terms and the probabilities."""

    loss: torch.Tensor
    prediction: torch.Tensor
    sparsity: torch.Tensor
    inverse: torch.Tensor
    p_masked: torch.Tensor  # (batch,) probability of the explained class on the masked input
    p_complement: torch.Tensor
    mask: torch.Tensor  # (batch, seq), 1 on special and padding tokens

    def row(self) -> dict[str, float]:
        return {
            "loss": self.loss.item(),
            "prediction": self.prediction.item(),
            "sparsity": self.sparsity.item(),
            "inverse": self.inverse.item(),
            "p_masked": self.p_masked.mean().item(),
            "p_complement": self.p_complement.mean().item(),
        }


def _aml_step(
    clf: Classifier,
    model: AttributionModel,
    batch: _Batch,
    condition: torch.Tensor,
    params: AmlParams,
    logits_fn: Callable[[torch.Tensor], torch.Tensor],
    fill: torch.Tensor,
) -> _AmlStep:
    """AML's loss (Eq. 4-7) with ``condition`` (batch, n_labels) as y; the explained class is its argmax."""
    a = model(batch.input_ids, batch.attention_mask, batch.token_type_ids, condition)  # (batch, seq)
    keep = torch.where(batch.word_flags, a, torch.ones_like(a))
    drop = torch.where(batch.word_flags, 1 - a, torch.ones_like(a))
    embeds = clf.input_embeddings(batch.input_ids)  # (batch, seq, dim), no gradient (frozen)
    n = len(condition)
    logits = logits_fn(torch.cat([_blend(embeds, fill, keep), _blend(embeds, fill, drop)]))  # (2 batch, labels)
    log_probs = torch.log_softmax(logits, -1)
    target = condition.argmax(-1)
    rows = torch.arange(n, device=logits.device)
    prediction = -(condition * log_probs[:n]).sum(-1)  # (batch,) cross-entropy against y
    p_complement = log_probs[n:][rows, target].exp()
    inverse = -torch.log1p(-p_complement.clamp(max=1 - _EPS))
    flags = batch.word_flags.float()
    sparsity = -(torch.log1p(-a.clamp(max=1 - _EPS)) * flags).sum(-1) / flags.sum(-1).clamp_min(1)
    total = params.weight_prediction * prediction + params.weight_sparsity * sparsity + params.weight_inverse * inverse
    return _AmlStep(
        total.mean(),
        prediction.mean(),
        sparsity.mean(),
        inverse.mean(),
        log_probs[:n][rows, target].exp().detach(),
        p_complement.detach(),
        keep,
    )


def _optimizer(model: AttributionModel, lr: float, train_classes: bool) -> torch.optim.Optimizer:
    encoder = [p for p in model.backbone.parameters() if p.requires_grad]
    head_params = list(model.head.parameters()) + ([model.class_embeddings] if train_classes else [])
    groups = [{"params": head_params, "lr": lr * _HEAD_LR_FACTOR}]
    if encoder:
        groups.append({"params": encoder, "lr": lr})
    return torch.optim.AdamW(groups)


def _apply_gradients(loss: torch.Tensor, optimizer: torch.optim.Optimizer) -> None:
    trainable = [p for group in optimizer.param_groups for p in group["params"]]
    for p, g in zip(trainable, torch.autograd.grad(loss, trainable, allow_unused=True)):
        p.grad = g
    optimizer.step()


def pretrain_aml(
    clf: Classifier, example: Example, params: AmlParams, progress: ProgressFn | None = None
) -> PretrainedAml:
    """pAML: train a fresh attribution model on ``training_examples`` (counted on a private
    ``Classifier`` view, so the explanation that triggers it is not charged for it)."""
    start = time.perf_counter()
    own = Classifier(clf.loaded, batch_size=clf.batch_size)
    examples, source = training_examples(own, example, params.n_train, params.seed)
    encodings = [own.encode(own.fit_example(e)[0]) for e in examples]
    conditions = torch.tensor(own.predict_proba([e.variant for e in encodings]), dtype=torch.float32, device=clf.device)
    fill = _special_embedding(own, ("mask", "unk"))
    pad_id = own.tokenizer.pad_token_id or 0
    trace: dict[str, list[float]] = {}
    with torch.random.fork_rng(devices=_rng_devices(clf)), torch.enable_grad():
        torch.manual_seed(params.seed)
        backbone, backbone_name = _backbone(own)
        model = AttributionModel(backbone, own.num_labels, own.loaded.max_length, _uses_token_types(backbone)).to(
            clf.device
        )
        for p in model.backbone.parameters():
            p.requires_grad_(p is not model.backbone.get_input_embeddings().weight)
        model.train()
        optimizer = _optimizer(model, params.lr, train_classes=True)
        generator = torch.Generator().manual_seed(params.seed)
        orders = [torch.randperm(len(encodings), generator=generator).tolist() for _ in range(params.n_epochs)]
        chunks = [
            order[i : i + params.train_batch_size]
            for order in orders
            for i in range(0, len(order), params.train_batch_size)
        ]
        for step, rows in enumerate(chunks):
            batch = _Batch.of([encodings[r] for r in rows], pad_id, clf.device)
            doubled = batch.doubled()
            result = _aml_step(
                own, model, batch, conditions[rows], params, lambda e, d=doubled: _classifier_logits(own, e, d), fill
            )
            _apply_gradients(result.loss, optimizer)
            optimizer.zero_grad(set_to_none=True)
            _trace_row(trace, step=step, **result.row(), mean_mask=_mean_word_mask(result.mask, batch.word_flags))
            if progress is not None:
                progress(
                    (step + 1) / len(chunks),
                    f"pre-training the attribution model on {source} ({step + 1}/{len(chunks)})",
                )
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return PretrainedAml(
        model,
        backbone_name,
        source,
        len(examples),
        time.perf_counter() - start,
        own.forward_passes,
        own.backward_passes,
        trace,
    )


def _mean_word_mask(mask: torch.Tensor, word_flags: torch.Tensor) -> float:
    return float(mask.detach()[word_flags].mean()) if bool(word_flags.any()) else 1.0


class _PretrainedCache:
    """The engine-level cache of pre-trained attribution models (a few, least recently used
    dropped), keyed by the classifier object, the pre-training parameters and the training slice;
    shared by the app's sessions and the command line's benchmarks. Training runs under the lock."""

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self.entries: OrderedDict[tuple, tuple[weakref.ref, PretrainedAml]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, clf: Classifier, example: Example, params: AmlParams, progress: ProgressFn | None) -> PretrainedAml:
        settings = tuple(getattr(params, name) for name in PRETRAIN_FIELDS)
        slice_key = example.words if training_split(clf) is None else None
        key = (id(clf.loaded.model), clf.name, str(clf.device), settings, slice_key)
        with self.lock:
            found = self.entries.get(key)
            if found is not None and found[0]() is clf.loaded.model:
                self.entries.move_to_end(key)
                return found[1]
            trained = pretrain_aml(clf, example, params, progress)
            self.entries[key] = (weakref.ref(clf.loaded.model), trained)
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)
            return trained

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()


PRETRAINED = _PretrainedCache()


def pretrained_aml(
    clf: Classifier, example: Example, params: AmlParams, progress: ProgressFn | None = None
) -> PretrainedAml:
    """The cached pre-trained attribution model for this classifier and parameters (trained on first use)."""
    return PRETRAINED.get(clf, example, params, progress)


# =========================================================================== AML: explaining one example


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
    clf: Classifier, example: Example, target: int, params: AmlParams, *, mlm=None, progress: ProgressFn | None = None
) -> Attribution:
    """pAML (one forward pass of the pre-trained attribution model) or fAML (a copy fine-tuned on
    this example for ``n_steps``, keeping the best step by ``select_by``)."""

    def pretrain_progress(fraction: float, message: str) -> None:
        if progress is not None:
            progress(0.8 * fraction, message)

    pretrained = pretrained_aml(clf, example, params, pretrain_progress)
    encoded = clf.encode(example)
    probs = clf.predict_proba([encoded.variant])[0]
    # y: the predicted distribution when explaining the predicted class (the paper), else one-hot.
    condition = probs if int(np.argmax(probs)) == target else np.eye(clf.num_labels)[target]
    condition_t = torch.tensor(condition[None], dtype=torch.float32, device=clf.device)
    batch = _Batch.of([encoded], clf.tokenizer.pad_token_id or 0, clf.device)
    fill = _special_embedding(clf, ("mask", "unk"))
    fine_tune = params.mode == "fine_tune"
    n_steps = params.n_steps if fine_tune else 0

    def logits_fn(embeds: torch.Tensor) -> torch.Tensor:
        return clf.forward_embeds(embeds, encoded.variant).float()

    trace: dict[str, list[float]] = {}
    maps: list[np.ndarray] = []
    with torch.random.fork_rng(devices=_rng_devices(clf)), torch.enable_grad():
        torch.manual_seed(params.seed)
        model = copy.deepcopy(pretrained.model) if fine_tune else pretrained.model
        if fine_tune:
            for p in model.parameters():
                p.requires_grad_(
                    p is not model.backbone.get_input_embeddings().weight and p is not model.class_embeddings
                )
            optimizer = _optimizer(model, params.lr, train_classes=False)
        for step in range(n_steps + 1):
            with torch.set_grad_enabled(step < n_steps):  # the last map is only evaluated
                result = _aml_step(clf, model, batch, condition_t, params, logits_fn, fill)
            maps.append(result.mask[0].detach().cpu().double().numpy())
            _trace_row(trace, step=step, **result.row(), mean_mask=_mean_word_mask(result.mask, batch.word_flags))
            if step < n_steps:
                _apply_gradients(result.loss, optimizer)
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
        **_span_extras(scores, 0.5),
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
# `python -m cli bench` on the bundled models (BENCHMARKS.md): a MaRC step is one such pass; an
# fAML step also runs the attribution encoder (same size) and its selection; pAML pre-training
# costs about 1.6 such passes per training example and epoch.
MARC_STEP_COST = 1.0
AML_STEP_COST = 4.0
AML_PRETRAIN_COST = 1.6


def marc_steps(params: MarcParams) -> Steps:
    """Cost model of MaRC: at most ``n_steps`` steps."""
    note = f"at most {params.n_steps} optimisation steps" + (
        "; the early stop often ends sooner" if params.early_stop else ""
    )
    return Steps(run=params.n_steps * MARC_STEP_COST, note=note)


def aml_steps(params: AmlParams) -> Steps:
    """Cost model of AML: fAML's fine-tuning steps plus one pass, and pAML's one-off pre-training."""
    finetune = (params.n_steps if params.mode == "fine_tune" else 0) * AML_STEP_COST + 1.0
    return Steps(
        run=finetune,
        pretrain=params.n_train * params.n_epochs * AML_PRETRAIN_COST,
        note=f"pre-training on {params.n_train} examples once per model",
    )
