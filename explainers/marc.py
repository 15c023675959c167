"""MaRC: a word mask learned by input mask optimisation (Brinner & Zarrieß 2023, "Model
Interpretability and Rationale Extraction by Input Mask Optimization").

One mask value per word (a word's subwords share it), parameterised by Gaussian spans: word
``i`` carries a weight ``w_i`` and a width ``s_i``, and the mask of word ``j`` is
``sigmoid(sum_i w_i exp(-(i-j)^2 / s_i))`` (``s_i^2`` in the authors' code, a parameter). The
word embeddings are blended toward the [PAD] embedding, ``mask * x + (1 - mask) * pad``, and
Adam minimises ``-score(c | masked) + complement term + alpha_mask * mean(mask)^2
- alpha_width * mean(log s)``, with Gaussian noise on the blended embeddings and random 0/1
flips of a few mask values at every step. The continuous mask is the attribution; the words
whose mask exceeds ``span_threshold`` form the rationale spans. The shared classifier is never
modified (the optimised tensors are the mask parameters; gradients via ``torch.autograd.grad``);
the optimisation trace is reported in ``extras``.

Several examples are optimised together (``explain_marc_batch``, the registry's batch function:
a dataset run and the benchmark use it): each keeps its own parameters, Adam state, random
stream and early stop, and one padded forward and backward pass per step serves all of them.
``explain_marc`` is the same code on one example.

The score follows the head (``core.heads``): a multi-label head is scored by the label's own
log-sigmoid whatever ``score`` asks (its softmax would compare labels that are not exclusive), a
regression head by its raw score (kept words raise it, the complement lowers it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from core.classifier import Classifier, ProgressFn
from core.encoding import Encoded, length_chunks
from core.params import param, seed_param
from core.types import Attribution, Example
from explainers._masking import (
    EPS,
    blend,
    embed_ids,
    padded,
    span_extras,
    special_embedding,
    token_word_index,
    trace_row,
)
from explainers.base import Steps, make_attribution, one_example

# MaRC's early-stop rule (authors' code): checked every 50 steps, on the change of the mean mask.
_STOP_EVERY = 50
_STOP_MIN_STEP = 199
_MIN_WIDTH = 0.05
# Cost of a step in units of one batch-2 forward+backward pass of the classifier (`python -m cli
# bench`, BENCHMARKS.md): a MaRC step is one such pass.
STEP_COST = 1.0


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
    seed: int = seed_param("random seed of the noise and the flips")


def head_score(clf: Classifier, score: str) -> str:
    """The scoring function the head allows: ``score`` for a single-label head, the label's own
    log-sigmoid for a multi-label head, the raw score (``raw``) for a regression head."""
    return {"single_label": score, "multi_label": "log_sigmoid", "regression": "raw"}[clf.head.kind]


def _class_prob(logits: torch.Tensor, target: int, score: str) -> torch.Tensor:
    """(batch,) probability-like value of the target under the scoring function."""
    if score == "raw":
        return logits[:, target]
    if score == "log_softmax":
        return torch.softmax(logits, -1)[:, target]
    if score == "log_sigmoid":
        return torch.sigmoid(logits[:, target])
    return 0.9 * torch.sigmoid(logits[:, target]) + 0.1 * torch.softmax(logits, -1)[:, target]


def _class_log_score(logits: torch.Tensor, target: int, score: str) -> torch.Tensor:
    if score == "raw":
        return logits[:, target]
    if score == "log_softmax":
        return torch.log_softmax(logits, -1)[:, target]
    if score == "log_sigmoid":
        return nn.functional.logsigmoid(logits[:, target])
    return torch.log(_class_prob(logits, target, score).clamp_min(EPS))


def _complement_term(logits: torch.Tensor, target: int, score: str, complement: str) -> torch.Tensor:
    if complement == "none":
        return logits.new_zeros(())
    if complement == "log_prob" or score == "raw":
        return _class_log_score(logits, target, score)[0]
    return -torch.log1p(-_class_prob(logits, target, score)[0].clamp(max=1 - EPS))


def span_mask(weights: torch.Tensor, widths: torch.Tensor, kernel: str) -> torch.Tensor:
    """MaRC's Gaussian span parameterisation (Eq. 5-6): (n,) weights and widths -> (n,) mask
    in (0, 1)."""
    positions = torch.arange(len(weights), device=weights.device, dtype=weights.dtype)
    distance2 = (positions[None, :] - positions[:, None]) ** 2  # (source i, target j)
    scale = widths**2 if kernel == "sigma_squared" else widths
    spread = weights[:, None] * torch.exp(-distance2 / scale[:, None])
    return torch.sigmoid(spread.sum(0))


def _flip(mask: torch.Tensor, fraction: float, generator: torch.Generator) -> torch.Tensor:
    """Set a random ``fraction`` of values to 0 and, independently, to 1 (a value drawn by both
    stays)."""
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


@dataclass
class _Run:
    """One example's optimisation: its inputs, its own random stream and mask parameters, and its
    record."""

    example: Example
    owner: int  # its position in the batched request (``Classifier.per_example``)
    encoded: Encoded
    target: int
    embeds: torch.Tensor  # (seq, dim)
    word_index: torch.Tensor  # (seq,)
    noise_scale: float
    generator: torch.Generator
    weights: torch.Tensor
    widths: torch.Tensor
    trace: dict[str, list[float]] = field(default_factory=dict)
    previous_mean: float = 1.0
    stopped_at: int | None = None
    done: bool = False
    steps_run: int = 0


def _start(clf: Classifier, example: Example, owner: int, target: int, params: MarcParams) -> _Run:
    encoded = clf.encode(example)
    embeds = embed_ids(clf, list(encoded.input_ids))[0]  # (seq, dim)
    word_index = token_word_index(encoded, clf.device)
    words_only = embeds[word_index < encoded.n_words]
    noise_scale = params.noise_std * float(words_only.std()) if len(words_only) > 1 else params.noise_std
    n = encoded.n_words
    return _Run(
        example,
        owner,
        encoded,
        target,
        embeds,
        word_index,
        noise_scale,
        torch.Generator().manual_seed(params.seed),
        torch.full((n,), params.init_weight, device=clf.device, requires_grad=True),
        torch.full((n,), params.init_width, device=clf.device, requires_grad=True),
    )


def _keeps(run: _Run, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(seq,) keep weights of the masked input (λ, Eq. 1) and of the complement (1 − λ, Eq. 3) from
    a word mask: the special tokens are not features, so both inputs keep them."""
    ones = mask.new_ones(1)
    return torch.cat([mask, ones])[run.word_index], torch.cat([1 - mask, ones])[run.word_index]


def _inputs(run: _Run, pad: torch.Tensor, params: MarcParams, mask: torch.Tensor) -> torch.Tensor:
    """(2, seq, dim): the masked and the complement input of this step, with flips and noise drawn
    from the example's own generator (in the order a single-example run draws them)."""
    keep, complement = _keeps(run, _flip(mask, params.flip_fraction, run.generator))
    pair = torch.stack([blend(run.embeds, pad, keep), blend(run.embeds, pad, complement)])
    return pair + run.noise_scale * torch.randn(pair.shape, generator=run.generator).to(pair.device)


def explain_marc_batch(
    clf: Classifier,
    examples: Sequence[Example],
    targets: Sequence[int],
    params: MarcParams,
    *,
    mlm=None,
    progress: ProgressFn | None = None,
) -> list[Attribution]:
    """MaRC on several examples at once: every example keeps its own mask parameters, Adam state,
    random stream (seeded with ``params.seed``) and early stop, and each step runs the masked and
    complement inputs of all examples still optimising as one padded forward and backward pass
    (``length_chunks``: at most ``batch_size`` rows, fewer for long texts). A row's logits do not
    depend on the other rows, so each example's result equals its single-example run to float
    rounding; each example is charged its own passes (two per step it ran, two for the final
    mask)."""
    runs = [_start(clf, example, i, target, params) for i, (example, target) in enumerate(zip(examples, targets))]
    # two rows per example: half the batch size in examples (and half its tokens)
    parts = length_chunks([len(run.encoded.input_ids) for run in runs], clf.batch_size // 2)
    out: dict[int, Attribution] = {}
    for number, part in enumerate(parts):

        def step(fraction: float, message: str, number: int = number) -> None:
            if progress is not None:
                progress((number + fraction) / len(parts), message)

        out.update(zip(part, _optimise(clf, [runs[i] for i in part], params, step)))
    return [out[i] for i in range(len(runs))]


def _logits(clf: Classifier, runs: list[_Run], masked: list[torch.Tensor], complement: list[torch.Tensor]):
    """(2 n, labels) float logits of the examples' masked rows, then their complement rows, from
    one padded pass; each row charged to its example."""
    width = max(len(run.encoded.input_ids) for run in runs)
    embeds = torch.cat([padded(masked, width), padded(complement, width)])
    variants = [run.encoded.variant for run in runs] * 2
    return clf.forward_embeds(embeds, variants, owners=[run.owner for run in runs] * 2).float()


def _optimise(clf: Classifier, runs: list[_Run], params: MarcParams, progress: ProgressFn) -> list[Attribution]:
    score = head_score(clf, params.score)
    pad = special_embedding(clf, ("pad",))
    optimizer = torch.optim.Adam([p for run in runs for p in (run.weights, run.widths)], lr=params.lr, foreach=True)
    with torch.enable_grad():
        for step in range(params.n_steps):
            active, masks = [], []
            for run in runs:
                if run.done:
                    continue
                mask = span_mask(run.weights, run.widths, params.kernel)  # (n_words,)
                mean = mask.detach().mean().item()
                if params.early_stop and step > 0 and step % _STOP_EVERY == 0:
                    if _should_stop(step, mean, run.previous_mean):
                        run.stopped_at, run.done = step, True
                        continue
                    run.previous_mean = mean
                active.append(run)
                masks.append(mask)
            if not active:
                break
            pairs = [_inputs(run, pad, params, mask) for run, mask in zip(active, masks)]
            logits = _logits(clf, active, [p[:1] for p in pairs], [p[1:] for p in pairs])
            n = len(active)
            total = logits.new_zeros(())
            terms = []
            for i, (run, mask) in enumerate(zip(active, masks)):
                pair = logits[[i, n + i]]
                sufficiency = -_class_log_score(pair[:1], run.target, score)[0]
                complement = _complement_term(pair[1:], run.target, score, params.complement)
                sparsity = params.alpha_mask * mask.mean() ** 2
                width_term = -params.alpha_width * torch.log(run.widths).mean()
                loss = sufficiency + complement + sparsity + width_term
                total = total + loss
                terms.append((loss, sufficiency, complement, sparsity, width_term, pair))
            trainable = [p for run in active for p in (run.weights, run.widths)]
            optimizer.zero_grad(set_to_none=True)  # a stopped example's parameters keep no gradient: Adam skips them
            for p, g in zip(trainable, torch.autograd.grad(total, trainable)):
                p.grad = g
            optimizer.step()
            for run, mask, (loss, sufficiency, complement, sparsity, width_term, pair) in zip(active, masks, terms):
                with torch.no_grad():
                    run.widths.clamp_(min=_MIN_WIDTH)
                probs = clf.head.outputs(pair.detach())[:, run.target]
                run.steps_run += 1
                trace_row(
                    run.trace,
                    step=step,
                    loss=loss.item(),
                    sufficiency=sufficiency.item(),
                    complement=complement.item(),
                    sparsity=sparsity.item(),
                    width=width_term.item(),
                    p_masked=probs[0].item(),
                    p_complement=probs[1].item(),
                    mean_mask=mask.detach().mean().item(),
                )
            if step % 10 == 0 or step == params.n_steps - 1:
                progress((step + 1) / params.n_steps, f"mask step {step + 1}/{params.n_steps}")
    return _finish(clf, runs, params, score, pad)


def _finish(clf: Classifier, runs: list[_Run], params: MarcParams, score: str, pad: torch.Tensor) -> list[Attribution]:
    """The final masks, without noise or flips, on the masked and the complement input of every
    example (one pass), and each example's attribution."""
    with torch.no_grad():
        masks = [span_mask(run.weights, run.widths, params.kernel) for run in runs]
        keeps = [_keeps(run, mask) for run, mask in zip(runs, masks)]
        logits = _logits(
            clf,
            runs,
            [blend(run.embeds, pad, keep)[None] for run, (keep, _) in zip(runs, keeps)],
            [blend(run.embeds, pad, complement)[None] for run, (_, complement) in zip(runs, keeps)],
        )
    n = len(runs)
    out = []
    for i, (run, mask) in enumerate(zip(runs, masks)):
        final_probs = clf.head.outputs(logits[[i, n + i]])[:, run.target].tolist()
        final = mask.cpu().double().numpy()
        extras = {
            "trace": run.trace,
            "trace_terms": ["sufficiency", "complement", "sparsity", "width"],
            "n_steps_run": run.steps_run,
            "early_stopped": run.stopped_at is not None,
            "score": score,
            "p_masked": final_probs[0],
            "p_complement": final_probs[1],
            "widths": run.widths.detach().cpu().double().numpy().tolist(),
            **span_extras(final, params.span_threshold),
        }
        out.append(
            make_attribution(
                run.example,
                run.target,
                final,
                extras=extras,
            )
        )
    return out


# MaRC: optimise per-word Gaussian-span mask parameters so the kept words alone keep the target
# class and the removed words alone lose it, with as little kept as possible (one example).
explain_marc = one_example(explain_marc_batch)


def steps(params: MarcParams) -> Steps:
    """Cost model: at most ``n_steps`` steps."""
    note = f"at most {params.n_steps} optimisation steps" + (
        "; the early stop often ends sooner" if params.early_stop else ""
    )
    return Steps(run=params.n_steps * STEP_COST, note=note)
