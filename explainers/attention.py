"""Attention-based scores as defined in the thesis "Assessing the Interpretability of Large Language
Models" (Oxford MSc, 2022, section 2.2.2.3).

* ``attention_mean``: attention received by each token, averaged over layers, heads and query
  positions: ``mean_{l,h,j} A[l, h, j, i]``;
* ``attention_rollout``: Abnar & Zuidema (2020): average the heads of each layer, optionally add
  the residual identity (``0.5 A + 0.5 I``, rows renormalised), multiply the layers from the
  first up (``R = A_L ... A_1``) and take the column mean of ``R``. The thesis prints the version
  without the identity term; both are offered (``residual``).

A word's score is the sum of its subwords' scores (the attention mass it receives). Attention
weights come from the eager kernel: both methods declare ``needs_attention_weights`` on the
registry, so the runner runs them on the eager-attention view of the shared weights
(core/attention_view.py). Several examples share one padded forward pass (``explain_*_batch``),
each reading its own rows and columns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from core.classifier import Classifier
from core.encoding import length_chunks
from core.params import NoParams, param
from core.types import Attribution, Example
from explainers.base import one_example
from explainers.gradients import to_attribution


@dataclass(frozen=True)
class RolloutParams:
    residual: bool = param(True, "add the residual identity term (0.5 A + 0.5 I) before multiplying layers")


def _each(
    clf: Classifier, examples: Sequence[Example], targets: Sequence[int], score: Callable[[torch.Tensor], torch.Tensor]
) -> list[Attribution]:
    """``score`` of every example's attention weights (layers, heads, seq, seq) -> (seq,) token
    scores, the weights read in one padded forward pass per ``batch_size`` examples of similar
    length."""
    encodings = [clf.encode(example) for example in examples]
    out: dict[int, Attribution] = {}
    for rows in length_chunks([len(e.input_ids) for e in encodings], clf.batch_size):
        weights = clf.attentions([encodings[i].variant for i in rows], owners=rows)
        for i, attention in zip(rows, weights, strict=True):
            out[i] = to_attribution(examples[i], targets[i], clf, encodings[i], score(attention).numpy())
    return [out[i] for i in range(len(examples))]


def received_mean(attention: torch.Tensor) -> torch.Tensor:
    """Attention each token receives, averaged over layers, heads, then query rows j."""
    return attention.mean(dim=(0, 1)).mean(dim=0).double()


def explain_mean_batch(
    clf: Classifier, examples: Sequence[Example], targets: Sequence[int], params: NoParams, *, mlm=None, progress=None
) -> list[Attribution]:
    return _each(clf, examples, targets, received_mean)


def rollout(attention: torch.Tensor, residual: bool) -> torch.Tensor:
    """Attention rollout matrix (seq, seq) from (layers, heads, seq, seq): every layer's heads
    averaged (and the identity mixed in) at once, then the layers multiplied from the first up."""
    layers = attention.double().mean(dim=1)  # (layers, seq, seq)
    if residual:
        layers = 0.5 * layers + 0.5 * torch.eye(layers.shape[-1], dtype=torch.float64)
        layers = layers / layers.sum(dim=-1, keepdim=True)
    result = layers[0]
    for layer in layers[1:]:
        result = layer @ result
    return result


def explain_rollout_batch(
    clf: Classifier,
    examples: Sequence[Example],
    targets: Sequence[int],
    params: RolloutParams,
    *,
    mlm=None,
    progress=None,
) -> list[Attribution]:
    return _each(clf, examples, targets, lambda attention: rollout(attention, params.residual).mean(dim=0))


explain_mean = one_example(explain_mean_batch)
explain_rollout = one_example(explain_rollout_batch)
