"""Gradient methods on the input word embeddings (thesis, seed 002, section 1.1-1.3).

* ``saliency``: the gradient of the target output with respect to each token's embedding
  (Simonyan et al. 2014), reduced to a scalar by its L2 norm or its signed sum;
* ``grad_x_input``: the dot product of embedding and gradient;
* ``integrated_gradients``: Sundararajan et al. 2017 through Captum, from a baseline where every
  word token's embedding is the [PAD] or [MASK] embedding or zero (special tokens kept), with the
  convergence delta reported.

The target output is the softmax probability of the target class (or its logit, a parameter).
Subword scores are native; a word's score is the sum of its subwords' scores (for ``l2``
saliency, the L2 norm of all its subwords' gradients). The shared model is never modified:
its parameters are frozen and gradients are taken with ``torch.autograd.grad``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from core.classifier import Classifier, Encoded
from core.types import Attribution, Example
from explainers.base import make_attribution, param

OUTPUTS = ("probability", "logit")


@dataclass(frozen=True)
class SaliencyParams:
    reduction: str = param(
        "l2", "reduce each embedding gradient by its L2 norm or its signed sum", choices=("l2", "sum")
    )
    output: str = param("probability", "differentiate the target probability or logit", choices=OUTPUTS)


@dataclass(frozen=True)
class GradXInputParams:
    output: str = param("probability", "differentiate the target probability or logit", choices=OUTPUTS)


@dataclass(frozen=True)
class IntegratedGradientsParams:
    baseline: str = param("pad", "embedding every word token starts from", choices=("pad", "mask", "zero"))
    n_steps: int = param(50, "integration steps", min=2, max=2048)
    method: str = param(
        "gausslegendre",
        "Captum's integral approximation",
        choices=("gausslegendre", "riemann_trapezoid", "riemann_middle"),
    )
    output: str = param("probability", "differentiate the target probability or logit", choices=OUTPUTS)


def _target_output(logits: torch.Tensor, target: int, output: str) -> torch.Tensor:
    return torch.softmax(logits, dim=-1)[:, target] if output == "probability" else logits[:, target]


def _embed(clf: Classifier, encoded: Encoded) -> torch.Tensor:
    with torch.no_grad():
        return clf.input_embeddings(torch.tensor([encoded.input_ids])).detach()  # (1, seq, dim)


def _gradient(clf: Classifier, encoded: Encoded, target: int, output: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(embeddings, gradient), each (seq, dim), from one forward and backward pass."""
    embeds = _embed(clf, encoded).requires_grad_(True)
    with torch.enable_grad():
        value = _target_output(clf.forward_embeds(embeds, encoded.variant), target, output).sum()
        (grad,) = torch.autograd.grad(value, embeds)
    return embeds.detach()[0], grad[0]


def _to_attribution(
    example: Example,
    target: int,
    clf: Classifier,
    encoded: Encoded,
    token_scores: np.ndarray,
    word_reduce=np.sum,
    **extras,
) -> Attribution:
    positions = encoded.scored_positions
    word_ids = [encoded.word_ids[t] for t in positions]
    words = np.zeros(encoded.n_words, dtype=np.float64)
    for w in range(encoded.n_words):
        words[w] = word_reduce(token_scores[[t for t in positions if encoded.word_ids[t] == w]])
    return make_attribution(
        example,
        target,
        words,
        subwords=tuple(clf.tokenizer.convert_ids_to_tokens([encoded.input_ids[t] for t in positions])),
        subword_scores=token_scores[positions],
        subword_word_ids=tuple(word_ids),
        extras=extras,
    )


def _l2(values: np.ndarray) -> float:
    return float(np.sqrt(np.sum(values**2)))


def explain_saliency(
    clf: Classifier, example: Example, target: int, params: SaliencyParams, *, mlm=None, progress=None
) -> Attribution:
    encoded = clf.encode(example)
    _, grad = _gradient(clf, encoded, target, params.output)
    if params.reduction == "l2":
        # Word score: the L2 norm of the gradients of all its subword embeddings.
        squares = (grad**2).sum(-1).cpu().double().numpy()
        token_scores = np.sqrt(squares)
        return _to_attribution(example, target, clf, encoded, token_scores, word_reduce=_l2)
    return _to_attribution(example, target, clf, encoded, grad.sum(-1).cpu().double().numpy())


def explain_grad_x_input(
    clf: Classifier, example: Example, target: int, params: GradXInputParams, *, mlm=None, progress=None
) -> Attribution:
    encoded = clf.encode(example)
    embeds, grad = _gradient(clf, encoded, target, params.output)
    return _to_attribution(example, target, clf, encoded, (embeds * grad).sum(-1).cpu().double().numpy())


def baseline_embeddings(clf: Classifier, encoded: Encoded, baseline: str) -> torch.Tensor:
    """(1, seq, dim): word tokens replaced by the [PAD]/[MASK] embedding or zeros; specials kept."""
    embeds = _embed(clf, encoded).clone()
    positions = encoded.scored_positions
    if baseline == "zero":
        embeds[0, positions] = 0.0
    else:
        token = clf.special_tokens[baseline]
        if token is None:
            raise ValueError(f"{clf.name} has no [{baseline.upper()}] token for the baseline")
        embeds[0, positions] = _embed_ids(clf, [token])[0, 0]
    return embeds


def _embed_ids(clf: Classifier, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return clf.input_embeddings(torch.tensor([ids]))


def explain_integrated_gradients(
    clf: Classifier, example: Example, target: int, params: IntegratedGradientsParams, *, mlm=None, progress=None
) -> Attribution:
    from captum.attr import IntegratedGradients

    encoded = clf.encode(example)
    inputs = _embed(clf, encoded)
    baselines = baseline_embeddings(clf, encoded, params.baseline)

    def forward(embeds: torch.Tensor) -> torch.Tensor:
        return _target_output(clf.forward_embeds(embeds, encoded.variant), target, params.output)

    with torch.enable_grad():
        attributions, delta = IntegratedGradients(forward).attribute(
            inputs,
            baselines=baselines,
            n_steps=params.n_steps,
            method=params.method,
            internal_batch_size=clf.batch_size,
            return_convergence_delta=True,
        )
    token_scores = attributions[0].sum(-1).detach().cpu().double().numpy()
    return _to_attribution(example, target, clf, encoded, token_scores, convergence_delta=float(delta.abs().max()))
