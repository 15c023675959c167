"""Gradient methods on the input word embeddings, as defined in the thesis "Assessing the
Interpretability of Large Language Models" (Oxford MSc, 2022, section 2.2.2.1).

* ``saliency``: the gradient of the target output with respect to each token's embedding
  (Simonyan et al. 2014), reduced to a scalar by its L2 norm or its signed sum;
* ``grad_x_input``: the dot product of embedding and gradient;
* ``integrated_gradients``: Sundararajan et al. 2017 through Captum, from a baseline where every
  word token's embedding is the [PAD] or [MASK] embedding or zero (special tokens kept), with the
  convergence delta reported.

The target output is the explained output of the target (``core.heads``: the softmax probability
of a class, the sigmoid probability of one label, a regression head's raw score) or its logit.
Subword scores are native; a word's score is the sum of its subwords' scores (for ``l2``
saliency, the L2 norm of all its subwords' gradients). The shared model is never modified:
its parameters are frozen and gradients are taken with ``torch.autograd.grad``.

Saliency and gradient x input explain several examples in one padded, attention-masked forward
and backward pass (``explain_*_batch``; one example is a batch of one), each example's gradient
the one it gets alone; integrated gradients sends the path points of several examples of similar
length through the model together, in Captum's chunks.

``explainers.word_scores`` recomputes any of the three as differentiable tensors (the
embedding attack's double back-propagation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from core.classifier import Classifier
from core.encoding import Encoded, Variant, length_chunks, token_texts
from core.params import param
from core.types import Attribution, Example, ProgressFn
from explainers._masking import embed_ids
from explainers.base import Passes, make_attribution, one_example

OUTPUTS = ("probability", "logit")


@dataclass(frozen=True)
class SaliencyParams:
    reduction: str = param(
        "l2", "reduce each embedding gradient by its L2 norm or its signed sum", choices=("l2", "sum")
    )
    output: str = param(
        "probability", "differentiate the target probability (a regression head: its score) or logit", choices=OUTPUTS
    )


@dataclass(frozen=True)
class GradXInputParams:
    output: str = param(
        "probability", "differentiate the target probability (a regression head: its score) or logit", choices=OUTPUTS
    )


@dataclass(frozen=True)
class IntegratedGradientsParams:
    baseline: str = param("pad", "embedding every word token starts from", choices=("pad", "mask", "zero"))
    n_steps: int = param(50, "integration steps", min=2, max=2048)
    method: str = param(
        "gausslegendre",
        "Captum's integral approximation",
        choices=("gausslegendre", "riemann_trapezoid", "riemann_middle"),
    )
    output: str = param(
        "probability", "differentiate the target probability (a regression head: its score) or logit", choices=OUTPUTS
    )


def passes_integrated_gradients(n_words: int, params: IntegratedGradientsParams) -> Passes:
    """Cost model: a forward and backward pass per path point, and a forward pass at each end of
    the path (for the completeness check)."""
    return Passes(classifier=params.n_steps + 2, backward=params.n_steps)


def embed(clf: Classifier, encoded: Encoded) -> torch.Tensor:
    """The input word embeddings of ``encoded``, (1, seq, dim), detached from the model."""
    return embed_ids(clf, list(encoded.input_ids))


def input_gradient(
    clf: Classifier,
    layouts: Sequence[Variant],
    embeds: torch.Tensor,
    targets: Sequence[int | None],
    output: str,
    create_graph: bool,
    owners: Sequence[int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """(gradient of each row's target output w.r.t. ``embeds``, logits, the targets) from one
    forward and backward pass over the rows (each its own example, right-padded to the widest:
    ``layouts``). A None target is the row's predicted label, read off this pass's outputs;
    with ``create_graph`` the gradient stays differentiable w.r.t. what ``embeds`` depends on."""
    inputs = embeds if create_graph else embeds.detach().requires_grad_(True)
    with torch.enable_grad():
        logits = clf.forward_embeds(inputs, layouts, owners=owners)
        predicted: list[int] = []
        if any(target is None for target in targets):
            predicted = [clf.head.predicted(row) for row in _explained_outputs(clf, logits)]
        chosen = [predicted[r] if t is None else int(t) for r, t in enumerate(targets)]
        value = clf.head.target_output(logits, chosen, output).sum()
        (grad,) = torch.autograd.grad(value, inputs, create_graph=create_graph)
    return grad, logits, chosen


def _explained_outputs(clf: Classifier, logits: torch.Tensor) -> np.ndarray:
    """(rows, labels): every label's explained output (``core.heads``), in float64 as the scorer
    computes it, so a prediction read off a gradient pass is the scorer's."""
    return clf.head.outputs(logits.detach().float().cpu().double()).numpy()


def _gradients(
    clf: Classifier, encodings: Sequence[Encoded], targets: Sequence[int | None], output: str
) -> list[tuple[torch.Tensor, torch.Tensor, int, np.ndarray]]:
    """(embeddings, gradient), each (seq, dim), the target and every label's explained output of
    every example: one padded forward and backward pass per ``batch_size`` examples of similar
    length. Each example's rows are masked from the others', so its gradient is the one it gets
    alone. A None target is the example's predicted label (from the same pass). Inside
    ``Classifier.sharing_passes`` the request's second method on the same examples, targets and
    output (saliency and gradient x input) reads the first one's pass."""
    key = ("input_gradient", clf.model is clf.loaded.model, tuple(encodings), output)
    shared = clf.shared_pass((*key, tuple(targets)))
    if shared is not None:
        return shared
    out: dict[int, tuple[torch.Tensor, torch.Tensor, int, np.ndarray]] = {}
    for rows in length_chunks([len(e.input_ids) for e in encodings], clf.batch_size):
        chunk = [encodings[i] for i in rows]
        embeds = padded_embeddings(clf, chunk)
        grad, logits, chosen = input_gradient(
            clf, [e.variant for e in chunk], embeds, [targets[i] for i in rows], output, False, rows
        )
        outputs = _explained_outputs(clf, logits)
        for row, (i, e) in enumerate(zip(rows, chunk, strict=True)):
            out[i] = (embeds[row, : len(e.input_ids)], grad[row, : len(e.input_ids)], chosen[row], outputs[row])
    result = [out[i] for i in range(len(encodings))]
    clf.share_pass((*key, tuple(found[2] for found in result)), result)  # under the targets it resolved
    return result


def padded_embeddings(clf: Classifier, encodings: Sequence[Encoded]) -> torch.Tensor:
    """(n, width, dim): the input word embeddings of each encoding, right-padded with [PAD]'s."""
    pad = clf.tokenizer.pad_token_id or 0
    width = max(len(e.input_ids) for e in encodings)
    ids = torch.tensor([list(e.input_ids) + [pad] * (width - len(e.input_ids)) for e in encodings])
    with torch.no_grad():
        return clf.input_embeddings(ids).detach()


def to_attribution(
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
    by_word: list[list[int]] = [[] for _ in range(encoded.n_words)]
    for t, w in zip(positions, word_ids):
        by_word[w].append(t)
    words = np.array([word_reduce(token_scores[tokens]) for tokens in by_word], dtype=np.float64)
    return make_attribution(
        example,
        target,
        words,
        subwords=token_texts(clf.tokenizer, [encoded.input_ids[t] for t in positions]),
        subword_scores=token_scores[positions],
        subword_word_ids=tuple(word_ids),
        extras=extras,
    )


def _l2(values: np.ndarray) -> float:
    return float(np.sqrt(np.sum(values**2)))


def explain_saliency_batch(
    clf: Classifier,
    examples: Sequence[Example],
    targets: Sequence[int | None],
    params: SaliencyParams,
    *,
    mlm=None,
    progress=None,
) -> list[Attribution]:
    encodings = [clf.encode(example) for example in examples]
    out = []
    for example, encoded, (_, grad, target, outputs) in zip(
        examples, encodings, _gradients(clf, encodings, targets, params.output), strict=True
    ):
        if params.reduction == "l2":
            # Word score: the L2 norm of the gradients of all its subword embeddings.
            token_scores = np.sqrt((grad**2).sum(-1).cpu().double().numpy())
            reduce = _l2
        else:
            token_scores, reduce = grad.sum(-1).cpu().double().numpy(), np.sum
        out.append(to_attribution(example, target, clf, encoded, token_scores, reduce, outputs=outputs.tolist()))
    return out


def explain_grad_x_input_batch(
    clf: Classifier,
    examples: Sequence[Example],
    targets: Sequence[int | None],
    params: GradXInputParams,
    *,
    mlm=None,
    progress=None,
) -> list[Attribution]:
    encodings = [clf.encode(example) for example in examples]
    return [
        to_attribution(
            example, target, clf, encoded, (embeds * grad).sum(-1).cpu().double().numpy(), outputs=outputs.tolist()
        )
        for example, encoded, (embeds, grad, target, outputs) in zip(
            examples, encodings, _gradients(clf, encodings, targets, params.output), strict=True
        )
    ]


explain_saliency = one_example(explain_saliency_batch)
explain_grad_x_input = one_example(explain_grad_x_input_batch)


def baseline_embeddings(clf: Classifier, encoded: Encoded, baseline: str) -> torch.Tensor:
    """(1, seq, dim): word tokens replaced by the [PAD]/[MASK] embedding or zeros; specials kept."""
    embeds = embed(clf, encoded).clone()
    positions = encoded.scored_positions
    if baseline == "zero":
        embeds[0, positions] = 0.0
    else:
        token = clf.special_tokens[baseline]
        if token is None:
            raise ValueError(f"{clf.name} has no [{baseline.upper()}] token for the baseline")
        embeds[0, positions] = embed_ids(clf, [token])[0, 0]
    return embeds


def explain_integrated_gradients_batch(
    clf: Classifier,
    examples: Sequence[Example],
    targets: Sequence[int],
    params: IntegratedGradientsParams,
    *,
    mlm=None,
    progress=None,
) -> list[Attribution]:
    """Integrated gradients of several examples through Captum. One example's path already
    fills a pass when ``n_steps`` reaches ``clf.batch_size`` (the CPU's 64 rows); below that,
    as many examples of similar length as fill a pass share one call, their paths' points going
    through the model together (right-padded and masked, so each row gets the gradient it gets
    alone), ``clf.rows_for`` rows a pass."""
    encodings = [clf.encode(example) for example in examples]
    scores: dict[int, np.ndarray] = {}
    per_call = max(1, clf.batch_size // params.n_steps)
    points = _PathPoints(len(encodings) * params.n_steps, progress)
    for rows in length_chunks([len(e.input_ids) for e in encodings], per_call):
        chunk = [encodings[i] for i in rows]
        scores.update(zip(rows, _integrated_gradients_chunk(clf, chunk, rows, targets, params, points), strict=True))
    ends = _path_ends(clf, encodings, targets, params)
    # Completeness (Sundararajan et al. 2017): the scores sum to f(input) - f(baseline).
    deltas = [abs(scores[i].sum() - (end - start)) for i, (start, end) in enumerate(ends)]
    return [
        to_attribution(example, target, clf, encoded, scores[i], convergence_delta=float(deltas[i]))
        for i, (example, target, encoded) in enumerate(zip(examples, targets, encodings, strict=True))
    ]


class _PathPoints:
    """Progress through integrated gradients' path points: Captum runs them in internal batches
    that the forward function sees, so a long document reports each batch, not only its end."""

    def __init__(self, total: int, progress: ProgressFn | None) -> None:
        self.total, self.done, self.progress = total, 0, progress

    def ran(self, rows: int) -> None:
        self.done += rows
        if self.progress is not None:
            self.progress(min(1.0, self.done / self.total), f"path point {min(self.done, self.total)} of {self.total}")


def _integrated_gradients_chunk(
    clf: Classifier,
    chunk: Sequence[Encoded],
    owners: Sequence[int],
    targets: Sequence[int],
    params: IntegratedGradientsParams,
    points: _PathPoints,
) -> list[np.ndarray]:
    """The token scores of each encoding of ``chunk`` from one Captum call."""
    from captum.attr import IntegratedGradients

    inputs = padded_embeddings(clf, chunk)
    baselines = padded_baselines(clf, chunk, inputs, params.baseline)
    layouts = [e.variant for e in chunk]
    chosen = [targets[i] for i in owners]

    def forward(embeds: torch.Tensor, row_of: torch.Tensor) -> torch.Tensor:
        # Captum repeats ``row_of`` with the path's points, so it names each row's example.
        index = row_of.tolist()
        logits = clf.forward_embeds(embeds, [layouts[r] for r in index], owners=[owners[r] for r in index])
        points.ran(len(index))
        return clf.head.target_output(logits, [chosen[r] for r in index], params.output)

    with torch.enable_grad():
        attributions = IntegratedGradients(forward).attribute(
            inputs,
            baselines=baselines,
            additional_forward_args=(torch.arange(len(chunk)),),
            n_steps=params.n_steps,
            method=params.method,
            internal_batch_size=max(clf.rows_for(inputs.shape[1]), len(chunk)),
        )
    scores = attributions.sum(-1).detach().cpu().double().numpy()
    return [scores[row, : len(encoded.input_ids)] for row, encoded in enumerate(chunk)]


def padded_baselines(
    clf: Classifier, encodings: Sequence[Encoded], inputs: torch.Tensor, baseline: str
) -> torch.Tensor:
    """``inputs`` (``padded_embeddings`` of ``encodings``) with each row's words set to the
    baseline."""
    baselines = inputs.clone()
    for row, encoded in enumerate(encodings):
        baselines[row : row + 1, : len(encoded.input_ids)] = baseline_embeddings(clf, encoded, baseline)
    return baselines


def _path_ends(
    clf: Classifier, encodings: Sequence[Encoded], targets: Sequence[int], params: IntegratedGradientsParams
) -> np.ndarray:
    """(n, 2): each encoding's explained output at its baseline and at its input, every example's
    two ends in shared padded passes (not two per Captum call) for the convergence deltas."""
    inputs = padded_embeddings(clf, encodings)
    points = torch.cat([padded_baselines(clf, encodings, inputs, params.baseline), inputs])
    n = len(encodings)
    layouts = [e.variant for e in encodings] * 2
    owners = list(range(n)) * 2
    step = clf.rows_for(points.shape[1])
    outputs = []
    with torch.no_grad():
        for start in range(0, 2 * n, step):
            rows = range(start, min(start + step, 2 * n))
            width = max(len(layouts[r].input_ids) for r in rows)
            logits = clf.forward_embeds(
                points[start : rows.stop, :width], [layouts[r] for r in rows], owners=[owners[r] for r in rows]
            )
            outputs.append(clf.head.target_output(logits, [targets[owners[r]] for r in rows], params.output))
    return torch.cat(outputs).double().cpu().numpy().reshape(2, n).T


explain_integrated_gradients = one_example(explain_integrated_gradients_batch)
