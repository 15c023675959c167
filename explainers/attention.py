"""Attention-based scores (thesis, seed 002, sections 1.6 and 1.7).

* ``attention_mean``: attention received by each token, averaged over layers, heads and query
  positions: ``mean_{l,h,j} A[l, h, j, i]``;
* ``attention_rollout``: Abnar & Zuidema (2020): average the heads of each layer, optionally add
  the residual identity (``0.5 A + 0.5 I``, rows renormalised), multiply the layers from the
  first up (``R = A_L ... A_1``) and take the column mean of ``R``. The thesis prints the version
  without the identity term; both are offered (``residual``).

A word's score is the sum of its subwords' scores (the attention mass it receives).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.classifier import Classifier
from core.params import NoParams, param
from core.types import Attribution, Example
from explainers.gradients import to_attribution


@dataclass(frozen=True)
class RolloutParams:
    residual: bool = param(True, "add the residual identity term (0.5 A + 0.5 I) before multiplying layers")


def explain_mean(
    clf: Classifier, example: Example, target: int, params: NoParams, *, mlm=None, progress=None
) -> Attribution:
    encoded = clf.encode(example)
    attention = clf.attentions(encoded.variant)  # (layers, heads, seq, seq)
    received = attention.mean(dim=(0, 1)).mean(dim=0)  # mean over layers, heads, then query rows j
    return to_attribution(example, target, clf, encoded, received.double().numpy())


def rollout(attention: torch.Tensor, residual: bool) -> torch.Tensor:
    """Attention rollout matrix (seq, seq) from (layers, heads, seq, seq)."""
    seq = attention.shape[-1]
    result = torch.eye(seq, dtype=torch.float64)
    for layer in attention.double():
        averaged = layer.mean(dim=0)
        if residual:
            averaged = 0.5 * averaged + 0.5 * torch.eye(seq, dtype=torch.float64)
            averaged = averaged / averaged.sum(dim=-1, keepdim=True)
        result = averaged @ result
    return result


def explain_rollout(
    clf: Classifier, example: Example, target: int, params: RolloutParams, *, mlm=None, progress=None
) -> Attribution:
    encoded = clf.encode(example)
    matrix = rollout(clf.attentions(encoded.variant), params.residual)
    return to_attribution(example, target, clf, encoded, matrix.mean(dim=0).numpy())
