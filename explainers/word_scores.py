"""Differentiable word scores of the gradient methods (``explainers.gradients``): saliency,
gradient x input and integrated gradients recomputed on given input embeddings, optionally
keeping the graph (``create_graph``, on the eager-attention view: the fused kernel has no second
derivative on the CPU) so the scores can be differentiated again. The embedding attack of
Ghorbani et al. 2019 (arXiv:1710.10547, experiments/attacks/embedding.py) uses them. Integrated
gradients here use Captum's quadrature nodes (``quadrature``, from
``numpy.polynomial.legendre.leggauss`` for Gauss-Legendre), so the scores equal the registry
explainers'.
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch

from core.classifier import Classifier
from core.encoding import Encoded
from explainers.gradients import (
    GradXInputParams,
    IntegratedGradientsParams,
    SaliencyParams,
    baseline_embeddings,
    input_gradient,
)


def quadrature(method: str, n_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """(weights, points in [0, 1]) of integrated gradients' path integral, as Captum builds them:
    Gauss-Legendre nodes (``numpy.polynomial.legendre.leggauss`` rescaled to [0, 1]) or the
    trapezoid / midpoint Riemann sums."""
    if method == "gausslegendre":
        nodes, weights = np.polynomial.legendre.leggauss(n_steps)
        return 0.5 * weights, 0.5 * (1.0 + nodes)
    if method == "riemann_trapezoid":
        weights = np.full(n_steps, 1.0 / n_steps)
        weights[[0, -1]] /= 2
        return weights, np.linspace(0.0, 1.0, n_steps)
    if method == "riemann_middle":
        return np.full(n_steps, 1.0 / n_steps), np.linspace(1 / (2 * n_steps), 1 - 1 / (2 * n_steps), n_steps)
    raise ValueError(f"unknown integral approximation {method!r}")


def word_scores(
    clf: Classifier,
    encoded: Encoded,
    embeds: torch.Tensor,
    target: int,
    params: SaliencyParams | GradXInputParams | IntegratedGradientsParams,
    *,
    create_graph: bool = False,
    n_steps: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A gradient method's word scores (n_words,) and the class probabilities (n_labels,) at the
    input word embeddings ``embeds`` (1, seq, dim); the method is the one ``params`` belongs to.

    The scores equal the registry explainer's (integrated gradients with the same quadrature
    nodes as Captum). With ``create_graph`` both stay differentiable with respect to whatever
    ``embeds`` depends on (double back-propagation, used by the embedding attack of Ghorbani et
    al. 2019, arXiv:1710.10547); ``n_steps`` overrides integrated gradients' step count.
    """
    if not create_graph:
        embeds = embeds.detach()
    matrix = _word_matrix(encoded, embeds.dtype, embeds.device)
    # Eager attention has a second derivative on every device (the fused kernel has none on the CPU).
    second_order = clf.eager_attention() if create_graph else contextlib.nullcontext()
    with torch.enable_grad(), second_order:
        if isinstance(params, IntegratedGradientsParams):
            scores, probs = _integrated_gradients(
                clf, encoded, embeds, target, params, matrix, create_graph, n_steps or params.n_steps
            )
        else:
            grad, logits, _ = input_gradient(clf, [encoded.variant], embeds, [target], params.output, create_graph)
            probs = clf.head.outputs(logits)[0]
            if isinstance(params, GradXInputParams):
                scores = matrix @ (embeds[0] * grad[0]).sum(-1)
            elif params.reduction == "sum":
                scores = matrix @ grad[0].sum(-1)
            else:
                # A word's L2 saliency: the norm of all its subword gradients (clamped: sqrt has no slope at 0).
                scores = (matrix @ (grad[0] ** 2).sum(-1)).clamp_min(1e-24).sqrt()
    return (scores, probs) if create_graph else (scores.detach(), probs.detach())


def _word_matrix(encoded: Encoded, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """(n_words, seq) 0/1 matrix summing token values into their word (special tokens dropped)."""
    matrix = torch.zeros((encoded.n_words, len(encoded.input_ids)), dtype=dtype, device=device)
    for t, w in enumerate(encoded.word_ids):
        if w is not None:
            matrix[w, t] = 1.0
    return matrix


def _integrated_gradients(
    clf: Classifier,
    encoded: Encoded,
    embeds: torch.Tensor,
    target: int,
    params: IntegratedGradientsParams,
    matrix: torch.Tensor,
    create_graph: bool,
    n_steps: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    weights, points = (
        torch.tensor(v, dtype=embeds.dtype, device=embeds.device) for v in quadrature(params.method, n_steps)
    )
    baseline = baseline_embeddings(clf, encoded, params.baseline).to(embeds.dtype)  # (1, seq, dim)
    difference = embeds - baseline
    path = baseline + points.view(-1, 1, 1) * difference  # (n_steps, seq, dim)
    if not create_graph:
        path = path.detach().requires_grad_(True)
    rows = torch.cat([path, embeds])  # the path and the input itself (for its probabilities) in one pass
    size = clf.rows_for(len(encoded.input_ids))
    logits = torch.cat([clf.forward_embeds(rows[i : i + size], encoded.variant) for i in range(0, rows.shape[0], size)])
    value = clf.head.target_output(logits[:-1], target, params.output).sum()
    (grads,) = torch.autograd.grad(value, path, create_graph=create_graph)  # (n_steps, seq, dim)
    average = (weights.view(-1, 1, 1) * grads).sum(0)  # (seq, dim)
    probs = clf.head.outputs(logits[-1:])[0]
    return matrix @ (difference[0] * average).sum(-1), probs
