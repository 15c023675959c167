"""Adversarial perturbations of explanations (thesis, seed 002, sections 2.3 and 3.5, after
Ghorbani et al. 2019, "Interpretation of neural networks is fragile").

An attack looks for an input close to the original whose prediction stays put but whose
explanation no longer ranks the originally top-ranked words on top. ``k`` is 15% of the words,
rounded down, at least 1; the attack distance is ``D = -sum_{i in topk(a_x)} a_{x+delta, i}``.

* ``embedding_attack`` is the thesis's attack: a perturbation ``delta`` of the input word
  embeddings (special tokens untouched) with ``|delta|_inf <= epsilon``, found by gradient ascent
  on one of two objectives: **unconstrained** (maximise ``D``; a step that changes the predicted
  class is rejected and retried at half the size) or **constrained** (the thesis's own,
  ``alpha * D - beta * (p(x) - p(x + delta))^2`` with ``p`` the originally predicted class's
  probability). The explanation is differentiated with respect to ``delta`` (double
  back-propagation), so only the gradient methods can be attacked. The perturbed embeddings are
  also shown as their nearest vocabulary words (cosine similarity, special tokens excluded).
* ``substitution_attack`` is a readable variant: it replaces up to ``budget`` words (never the
  original top-k words) with masked-LM fill-ins, keeping the predicted class and its probability
  within ``tolerance``, and searches greedily or by beam for the substitutions that push the
  original top-k words furthest down the new explanation's ranking. Any registered method can
  be attacked this way, perturbation methods at their cost.

Measures (thesis section 2.3): **Rank Change**, the share of the k top positions whose word
differs (order-sensitive, as in the thesis's worked example: [12, 3, 7] against [3, 15, 7] gives
2/3); **Top-k Sum Change**, ``sum_{i in topk(a_x)} a_{x,i} - a_{x+delta,i}`` (raw, so not
comparable across methods); **Probability Change**, ``p(x) - p(x + delta)``. We add Spearman's
rho between the two explanations and ``success``: the predicted class is kept and at least one
top-k position changed.

The shared model is never modified: its parameters are frozen, the perturbation lives on a copy
of the input embeddings and gradients are taken with ``torch.autograd.grad``. Both attacks are
deterministic given their parameters (the embedding attack starts from ``delta = 0``; the
substitution attack passes its ``seed`` to stochastic explainers).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import explainers
from core.classifier import Classifier, Encoded, ProgressFn
from core.masked_lm import MaskedLM
from core.types import Attribution, Example
from explainers.base import make_attribution, param
from explainers.gradients import baseline_embeddings
from metrics.agreement import spearman, top_k
from metrics.base import mean_interval

ATTACKS = ("embedding", "substitution")
OBJECTIVES = ("unconstrained", "constrained")
GRADIENT_METHODS = ("saliency", "grad_x_input", "integrated_gradients")
MEASURES = ("rank_change", "topk_sum_change", "probability_change", "spearman", "success")


@dataclass(frozen=True)
class EmbeddingAttackParams:
    objective: str = param(
        "unconstrained",
        "unconstrained: keep the class; constrained: penalise the probability change",
        choices=OBJECTIVES,
    )
    epsilon: float = param(2.0, "L-infinity bound on the perturbation of each embedding coordinate", min=0.0)
    steps: int = param(500, "gradient ascent steps", min=1, max=10000)
    lr: float = param(0.1, "learning rate", min=0.0)
    halve_every: int = param(200, "halve the learning rate every this many steps", min=1)
    optimizer: str = param("sgd", "plain gradient ascent (the thesis) or Adam", choices=("sgd", "adam"))
    alpha: float = param(1.0, "weight of the attack distance (constrained objective)", min=0.0)
    beta: float = param(1.0, "weight of the squared probability change (constrained objective)", min=0.0)
    top_fraction: float = param(0.15, "k = this share of the words, rounded down, at least 1", min=0.01, max=1.0)
    stop_delta: float = param(1e-5, "early stop when no coordinate of delta moves more than this ...", min=0.0)
    patience: int = param(20, "... for this many steps in a row", min=1)
    ig_n_steps: int = param(8, "integration steps of integrated gradients inside the attack", min=2, max=512)


@dataclass(frozen=True)
class SubstitutionAttackParams:
    budget: int = param(3, "most words replaced", min=1, max=64)
    n_candidates: int = param(8, "masked-LM fill-ins tried per word", min=1, max=100)
    tolerance: float = param(0.05, "largest allowed change of the predicted class's probability", min=0.0, max=1.0)
    search: str = param(
        "greedy", "greedy: best single substitution per round; beam: keep beam_width states", choices=("greedy", "beam")
    )
    beam_width: int = param(3, "states kept per round by the beam search", min=1, max=32)
    top_fraction: float = param(0.15, "k = this share of the words, rounded down, at least 1", min=0.01, max=1.0)
    seed: int = param(0, "seed passed to stochastic explainers")


# The paper's settings, and fewer steps for interactive use on a CPU.
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "quick": {"steps": 60, "halve_every": 25, "patience": 10},
}


def make_params(attack: str, preset: str = "paper", overrides: dict[str, Any] | None = None) -> Any:
    """The parameters of an attack: a preset (embedding attack only) with overrides on top."""
    from explainers.base import params_from

    if attack == "embedding":
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
        return params_from(EmbeddingAttackParams, {**PRESETS[preset], **(overrides or {})})
    if attack == "substitution":
        return params_from(SubstitutionAttackParams, dict(overrides or {}))
    raise ValueError(f"unknown attack {attack!r}; known: {', '.join(ATTACKS)}")


# ---------------------------------------------------------------------------------- measures


def k_for(n_words: int, fraction: float) -> int:
    """The thesis's k: ``fraction`` of the words rounded down, at least 1 (at most n_words)."""
    if n_words < 1:
        raise ValueError(f"an attack needs at least one word, got {n_words}")
    return min(n_words, max(1, int(np.floor(fraction * n_words + 1e-9))))


def rank_change(original, attacked, k: int) -> float:
    """Share of the k top positions (by signed score) holding another word after the attack."""
    before, after = top_k(original, k), top_k(attacked, k)
    return float(np.mean(before != after))


def topk_sum_change(original, attacked, k: int) -> float:
    """Drop of the summed scores at the original top-k words (raw, method-dependent scale)."""
    top = top_k(original, k)
    return float(np.sum(np.asarray(original, dtype=np.float64)[top] - np.asarray(attacked, dtype=np.float64)[top]))


# ---------------------------------------------------------------------------------- the result


@dataclass(frozen=True)
class AttackResult:
    """One attack on one method's explanation of one example.

    ``attacked.words`` are the attacked text's words: the substituted words, or for the embedding
    attack each perturbed word's nearest vocabulary word(s); ``changed`` marks the words that
    differ from the original. ``delta`` is the embedding perturbation, (seq, dim), over the
    tokens of ``clf.encode(example)`` (None for the substitution attack).
    """

    attack: str
    method: str
    example: Example  # as attacked (cut to the model's maximum length)
    k: int
    original: Attribution
    attacked: Attribution
    changed: tuple[bool, ...]
    original_probabilities: tuple[float, ...]
    attacked_probabilities: tuple[float, ...]
    params: dict[str, Any]
    runtime_s: float = 0.0
    forward_passes: int = 0
    backward_passes: int = 0
    mlm_forward_passes: int = 0
    steps: int = 0
    trace: dict[str, tuple[float, ...]] = field(default_factory=dict)
    substitutions: tuple[tuple[int, str, str], ...] = ()
    delta: np.ndarray | None = None

    @property
    def target(self) -> int:
        return self.original.target

    @property
    def top_k(self) -> tuple[int, ...]:
        return tuple(int(i) for i in top_k(self.original.scores, self.k))

    @property
    def attacked_predicted(self) -> int:
        return int(np.argmax(self.attacked_probabilities))

    @property
    def rank_change(self) -> float:
        return rank_change(self.original.scores, self.attacked.scores, self.k)

    @property
    def topk_sum_change(self) -> float:
        return topk_sum_change(self.original.scores, self.attacked.scores, self.k)

    @property
    def probability_change(self) -> float:
        return self.original_probabilities[self.target] - self.attacked_probabilities[self.target]

    @property
    def spearman(self) -> float:
        return spearman(self.original.scores, self.attacked.scores)

    @property
    def success(self) -> bool:
        return self.attacked_predicted == self.target and self.rank_change > 0

    def measures(self) -> dict[str, Any]:
        rho = self.spearman
        return {
            "rank_change": self.rank_change,
            "topk_sum_change": self.topk_sum_change,
            "probability_change": self.probability_change,
            "spearman": None if np.isnan(rho) else rho,
            "success": self.success,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "attack": self.attack,
            "method": self.method,
            **self.measures(),
            "k": self.k,
            "top_k": list(self.top_k),
            "target": self.target,
            "original_probability": self.original_probabilities[self.target],
            "attacked_probability": self.attacked_probabilities[self.target],
            "attacked_predicted": self.attacked_predicted,
            "original_words": list(self.original.words),
            "original_scores": [float(s) for s in self.original.scores],
            "attacked_words": list(self.attacked.words),
            "attacked_scores": [float(s) for s in self.attacked.scores],
            "changed": list(self.changed),
            "substitutions": [list(s) for s in self.substitutions],
            "steps": self.steps,
            "runtime_s": self.runtime_s,
            "forward_passes": self.forward_passes,
            "backward_passes": self.backward_passes,
            "mlm_forward_passes": self.mlm_forward_passes,
            "params": self.params,
            # The embedding perturbation, one row per token of the model's encoding of
            # ``original_words`` (special tokens included, their rows zero), so the attacked
            # explanation can be recomputed outside this tool.
            "delta": None if self.delta is None else self.delta.astype(float).tolist(),
        }


# ---------------------------------------------------------------------------------- differentiable explanations


def _word_matrix(encoded: Encoded, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """(n_words, seq) 0/1 matrix summing token values into their word (special tokens dropped)."""
    matrix = torch.zeros((encoded.n_words, len(encoded.input_ids)), dtype=dtype, device=device)
    for t, w in enumerate(encoded.word_ids):
        if w is not None:
            matrix[w, t] = 1.0
    return matrix


def _target_output(logits: torch.Tensor, target: int, output: str) -> torch.Tensor:
    return torch.softmax(logits, dim=-1)[:, target] if output == "probability" else logits[:, target]


def _forward(clf: Classifier, embeds: torch.Tensor, encoded: Encoded) -> torch.Tensor:
    """Logits of a batch of embeddings, in chunks of ``clf.batch_size``."""
    chunks = [
        clf.forward_embeds(embeds[i : i + clf.batch_size], encoded.variant)
        for i in range(0, embeds.shape[0], clf.batch_size)
    ]
    return torch.cat(chunks)


def explain_embeddings(
    clf: Classifier,
    encoded: Encoded,
    embeds: torch.Tensor,
    target: int,
    method: str,
    params: Any,
    *,
    create_graph: bool = False,
    n_steps: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A gradient method's word scores (n_words,) and the class probabilities (n_labels,) at the
    input word embeddings ``embeds`` (1, seq, dim), computed as the registry's explainer does.

    With ``create_graph`` both stay differentiable with respect to whatever ``embeds`` depends on
    (the attack's ``delta``); ``n_steps`` overrides integrated gradients' step count.
    """
    if method not in GRADIENT_METHODS:
        raise ValueError(f"{method!r} is not differentiable; the embedding attack takes {', '.join(GRADIENT_METHODS)}")
    if not create_graph:
        embeds = embeds.detach()
    matrix = _word_matrix(encoded, embeds.dtype, embeds.device)
    # The math attention kernel is the one with a second derivative on every device.
    with torch.enable_grad(), sdpa_kernel(SDPBackend.MATH):
        if method == "integrated_gradients":
            scores, probs = _integrated_gradients(
                clf, encoded, embeds, target, params, matrix, create_graph, n_steps or params.n_steps
            )
        else:
            scores, probs = _gradient_scores(clf, encoded, embeds, target, method, params, matrix, create_graph)
    return (scores, probs) if create_graph else (scores.detach(), probs.detach())


def _gradient_scores(
    clf: Classifier,
    encoded: Encoded,
    embeds: torch.Tensor,
    target: int,
    method: str,
    params: Any,
    matrix: torch.Tensor,
    create_graph: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    inputs = embeds if create_graph else embeds.requires_grad_(True)
    logits = clf.forward_embeds(inputs, encoded.variant)
    value = _target_output(logits, target, params.output).sum()
    (grad,) = torch.autograd.grad(value, inputs, create_graph=create_graph)
    probs = torch.softmax(logits, dim=-1)[0]
    if method == "grad_x_input":
        return matrix @ (inputs[0] * grad[0]).sum(-1), probs
    if params.reduction == "sum":
        return matrix @ grad[0].sum(-1), probs
    # A word's L2 saliency: the norm of all its subword gradients (clamped: sqrt has no slope at 0).
    return (matrix @ (grad[0] ** 2).sum(-1)).clamp_min(1e-24).sqrt(), probs


def _integrated_gradients(
    clf: Classifier,
    encoded: Encoded,
    embeds: torch.Tensor,
    target: int,
    params: Any,
    matrix: torch.Tensor,
    create_graph: bool,
    n_steps: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    from captum.attr._utils.approximation_methods import approximation_parameters

    step_sizes, alphas = approximation_parameters(params.method)
    weights = torch.tensor(step_sizes(n_steps), dtype=embeds.dtype, device=embeds.device)
    points = torch.tensor(alphas(n_steps), dtype=embeds.dtype, device=embeds.device)
    baseline = baseline_embeddings(clf, encoded, params.baseline).to(embeds.dtype)  # (1, seq, dim)
    difference = embeds - baseline
    path = baseline + points.view(-1, 1, 1) * difference  # (n_steps, seq, dim)
    if not create_graph:
        path = path.detach().requires_grad_(True)
    value = _target_output(_forward(clf, path, encoded), target, params.output).sum()
    (grads,) = torch.autograd.grad(value, path, create_graph=create_graph)  # (n_steps, seq, dim)
    average = (weights.view(-1, 1, 1) * grads).sum(0)  # (seq, dim)
    probs = torch.softmax(clf.forward_embeds(embeds, encoded.variant), dim=-1)[0]
    return matrix @ (difference[0] * average).sum(-1), probs


def _embed(clf: Classifier, encoded: Encoded) -> torch.Tensor:
    with torch.no_grad():
        return clf.input_embeddings(torch.tensor([encoded.input_ids])).detach().float()  # (1, seq, dim)


def nearest_tokens(clf: Classifier, embeds: torch.Tensor) -> list[int]:
    """For each row of ``embeds`` (seq, dim), the vocabulary token whose embedding has the highest
    cosine similarity, among non-special tokens (reserved ``[unused]``-style tokens excluded)."""
    table = clf.embedding_layer().weight.detach().float()  # (vocab, dim)
    tokens = clf.tokenizer.convert_ids_to_tokens(list(range(table.shape[0])))
    excluded = set(clf.tokenizer.all_special_ids) | {
        i for i, t in enumerate(tokens) if t is None or (t.startswith("[") and t.endswith("]"))
    }
    with torch.no_grad():
        similarity = (
            torch.nn.functional.normalize(embeds.float(), dim=-1) @ torch.nn.functional.normalize(table, dim=-1).T
        )
        similarity[:, sorted(excluded)] = -float("inf")
        return similarity.argmax(-1).tolist()


def _nearest_words(
    clf: Classifier, encoded: Encoded, embeds: torch.Tensor, delta: torch.Tensor, words: Sequence[str]
) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    """Each word as the nearest tokens of its perturbed subword embeddings (a token left
    unperturbed stays itself), and whether it changed."""
    nearest = nearest_tokens(clf, embeds)
    moved = delta.abs().amax(-1).tolist()
    out, changed = [], []
    for w, word in enumerate(words):
        positions = encoded.word_positions(w)
        ids = [nearest[t] if moved[t] > 0 else encoded.input_ids[t] for t in positions]
        if ids == [encoded.input_ids[t] for t in positions]:
            out.append(word)
            changed.append(False)
        else:
            out.append(clf.tokenizer.convert_tokens_to_string(clf.tokenizer.convert_ids_to_tokens(ids)).strip() or word)
            changed.append(True)
    return tuple(out), tuple(changed)


# ---------------------------------------------------------------------------------- the embedding attack


class _Ascent:
    """Step directions for gradient ascent: the gradient itself, or Adam's normalised moment."""

    def __init__(self, optimizer: str, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8) -> None:
        self.optimizer, self.beta1, self.beta2, self.eps = optimizer, beta1, beta2, eps
        self.moment: torch.Tensor | None = None
        self.second: torch.Tensor | None = None
        self.t = 0

    def direction(self, grad: torch.Tensor) -> torch.Tensor:
        if self.optimizer == "sgd":
            return grad
        self.t += 1
        self.moment = (
            grad * (1 - self.beta1) if self.moment is None else self.beta1 * self.moment + (1 - self.beta1) * grad
        )
        self.second = (
            grad**2 * (1 - self.beta2) if self.second is None else self.beta2 * self.second + (1 - self.beta2) * grad**2
        )
        corrected = self.moment / (1 - self.beta1**self.t)
        return corrected / ((self.second / (1 - self.beta2**self.t)).sqrt() + self.eps)


def embedding_attack(
    clf: Classifier,
    example: Example,
    method: str,
    params: EmbeddingAttackParams | None = None,
    *,
    explainer_params: dict[str, Any] | None = None,
    progress: ProgressFn | None = None,
) -> AttackResult:
    """The thesis's attack on a gradient method's explanation of the predicted class (see module)."""
    params = params or EmbeddingAttackParams()
    spec = explainers.get(method)
    if method not in GRADIENT_METHODS:
        raise ValueError(f"{method!r} is not differentiable; the embedding attack takes {', '.join(GRADIENT_METHODS)}")
    method_params = spec.make_params(explainer_params)
    example, _ = clf.fit_example(example)
    encoded = clf.encode(example)
    passes0 = clf.forward_passes, clf.backward_passes
    start = time.perf_counter()

    base = _embed(clf, encoded)
    target = int(np.argmax(clf.predict_proba([encoded.variant])[0]))

    def explain(delta: torch.Tensor, attack_time: bool) -> tuple[torch.Tensor, torch.Tensor]:
        n_steps = params.ig_n_steps if attack_time else None
        return explain_embeddings(
            clf, encoded, base + delta, target, method, method_params, create_graph=attack_time, n_steps=n_steps
        )

    original_scores, original_probs = explain(torch.zeros_like(base), attack_time=False)
    k = k_for(encoded.n_words, params.top_fraction)
    top = torch.as_tensor(top_k(original_scores.detach().cpu().numpy(), k).copy())
    best, trace, steps = _ascend(
        explain, base, encoded, target, top, float(original_probs[target].detach()), params, progress
    )

    attacked_scores, attacked_probs = explain(best, attack_time=False)
    attacked_words, changed = _nearest_words(clf, encoded, (base + best)[0], best[0], example.words)
    original = _attribution(example, target, original_scores, method, method_params)
    attacked = dataclasses.replace(
        _attribution(example, target, attacked_scores, method, method_params), words=attacked_words
    )
    return AttackResult(
        attack="embedding",
        method=method,
        example=example,
        k=k,
        original=original,
        attacked=attacked,
        changed=changed,
        original_probabilities=tuple(float(p) for p in original_probs.detach()),
        attacked_probabilities=tuple(float(p) for p in attacked_probs.detach()),
        params=dataclasses.asdict(params),
        runtime_s=time.perf_counter() - start,
        forward_passes=clf.forward_passes - passes0[0],
        backward_passes=clf.backward_passes - passes0[1],
        steps=steps,
        trace=trace,
        delta=best[0].detach().cpu().numpy(),
    )


def _ascend(
    explain: Callable[[torch.Tensor, bool], tuple[torch.Tensor, torch.Tensor]],
    base: torch.Tensor,
    encoded: Encoded,
    target: int,
    top: torch.Tensor,
    p_original: float,
    params: EmbeddingAttackParams,
    progress: ProgressFn | None,
) -> tuple[torch.Tensor, dict[str, tuple[float, ...]], int]:
    """Projected gradient ascent on the attack objective; returns the best delta, the trace and
    the number of evaluated steps.

    Unconstrained: an iterate whose predicted class differs is rejected and the step retried at
    half the size. Constrained: every iterate counts. The best iterate (by objective) is returned.
    """
    word_mask = torch.zeros_like(base)
    word_mask[0, encoded.scored_positions] = 1.0

    def evaluate(delta: torch.Tensor) -> tuple[float, float, float, bool, torch.Tensor]:
        delta = delta.detach().requires_grad_(True)
        scores, probs = explain(delta, True)
        distance = -scores[top].sum()
        if params.objective == "constrained":
            objective = params.alpha * distance - params.beta * (p_original - probs[target]) ** 2
        else:
            objective = distance
        (grad,) = torch.autograd.grad(objective, delta)
        objective, distance, probs = objective.detach(), distance.detach(), probs.detach()
        return (
            float(objective),
            float(distance),
            float(probs[target]),
            int(torch.argmax(probs)) == target,
            grad * word_mask,
        )

    ascent = _Ascent(params.optimizer)
    delta = torch.zeros_like(base)
    objective, distance, probability, _, grad = evaluate(delta)
    best, best_objective = delta, objective
    trace: dict[str, list[float]] = {"objective": [objective], "distance": [distance], "probability": [probability]}
    direction = ascent.direction(grad)
    scale, still, steps = 1.0, 0, 0
    for step in range(params.steps):
        lr = params.lr * 0.5 ** (step // params.halve_every) * scale
        proposal = ((delta + lr * direction).clamp(-params.epsilon, params.epsilon) * word_mask).detach()
        objective, distance, probability, kept, grad = evaluate(proposal)
        steps += 1
        for key, value in (("objective", objective), ("distance", distance), ("probability", probability)):
            trace[key].append(value)
        if progress is not None and step % 5 == 0:
            progress(step / params.steps, f"step {step}: distance {distance:.4g}, p {probability:.3f}")
        if params.objective == "unconstrained" and not kept:
            scale *= 0.5  # reject the class-changing step and retry from the last kept delta
            if scale < 2**-10:
                break
            continue
        moved = float((proposal - delta).abs().max())
        delta = proposal
        direction = ascent.direction(grad)
        if objective > best_objective:
            best, best_objective = delta, objective
        still = still + 1 if moved < params.stop_delta else 0
        if still >= params.patience:
            break
    return best, {key: tuple(values) for key, values in trace.items()}, steps


def _attribution(example: Example, target: int, scores: torch.Tensor, method: str, method_params: Any) -> Attribution:
    attribution = make_attribution(example, target, scores.detach().cpu().double().numpy())
    return dataclasses.replace(attribution, method=method, params=dataclasses.asdict(method_params))


# ---------------------------------------------------------------------------------- the substitution attack


@dataclass(frozen=True)
class _State:
    """A set of substitutions, the attacked example, its explanation, probabilities and score."""

    substitutions: tuple[tuple[int, str], ...]
    example: Example
    attribution: Attribution
    probabilities: np.ndarray
    score: tuple[float, float]


def _demotion(scores: np.ndarray, top: np.ndarray) -> tuple[float, float]:
    """How far the original top-k words fell: the sum of their ranks in ``scores`` (0 = highest),
    then the negated share of the peak absolute score they keep (to break ties)."""
    order = top_k(scores, len(scores))
    ranks = np.empty(len(scores), dtype=np.float64)
    ranks[order] = np.arange(len(scores))
    peak = float(np.max(np.abs(scores))) or 1.0
    return float(ranks[top].sum()), -float(np.sum(scores[top])) / peak


def _substituted(example: Example, substitutions: Sequence[tuple[int, str]]) -> Example:
    words = list(example.words)
    for index, word in substitutions:
        words[index] = word
    split = len(example.segments[0])
    segments = (tuple(words[:split]), tuple(words[split:])) if example.is_pair else (tuple(words),)
    return dataclasses.replace(example, segments=segments)


def _candidates(mlm: MaskedLM, example: Example, positions: list[int], n_candidates: int) -> dict[int, list[str]]:
    """Masked-LM fill-ins per position: whole words only, never the original word or a special token."""
    specials = set(mlm.tokenizer.all_special_tokens)
    out: dict[int, list[str]] = {}
    for position, (fills, _) in zip(positions, mlm.fill_words(example.segments, positions, k=n_candidates)):
        original = example.words[position].lower()
        words = []
        for fill in fills:
            text = mlm.token_text(fill.token)
            if fill.token in specials or text.startswith("##") or not text or text.lower() == original or text in words:
                continue
            words.append(text)
        out[position] = words
    return out


def substitution_attack(
    clf: Classifier,
    example: Example,
    method: str,
    mlm: MaskedLM,
    params: SubstitutionAttackParams | None = None,
    *,
    explainer_params: dict[str, Any] | None = None,
    progress: ProgressFn | None = None,
) -> AttackResult:
    """Substitute up to ``budget`` non-top-k words by masked-LM fill-ins (see module)."""
    params = params or SubstitutionAttackParams()
    spec = explainers.get(method)
    overrides = dict(explainer_params or {})
    if spec.stochastic:
        overrides.setdefault("seed", params.seed)
    method_params = spec.make_params(overrides)
    example, _ = clf.fit_example(example)
    passes0 = clf.forward_passes, clf.backward_passes, mlm.forward_passes
    start = time.perf_counter()

    probabilities = clf.predict_proba([clf.encode(example).variant])[0]
    target = int(np.argmax(probabilities))
    original = explainers.run_explainer(spec, clf, example, target, method_params, mlm=mlm)
    k = k_for(len(example.words), params.top_fraction)
    top = top_k(original.scores, k)
    positions = [i for i in range(len(example.words)) if i not in set(top.tolist())]
    candidates = _candidates(mlm, example, positions, params.n_candidates) if positions else {}

    def expand(states: list[_State]) -> list[_State]:
        seen: set[tuple[tuple[int, str], ...]] = set()
        proposals = []
        for state in states:
            used = {i for i, _ in state.substitutions}
            for position in positions:
                for word in candidates.get(position, []) if position not in used else []:
                    key = tuple(sorted((*state.substitutions, (position, word))))
                    if key not in seen:
                        seen.add(key)
                        proposals.append(key)
        examples = [_substituted(example, key) for key in proposals]
        scored = (
            clf.predict_proba([clf.encode(e).variant for e in examples]) if examples else np.empty((0, clf.num_labels))
        )
        out = []
        for key, attacked, probs in zip(proposals, examples, scored):
            if int(np.argmax(probs)) != target or abs(probs[target] - probabilities[target]) > params.tolerance:
                continue
            attribution = explainers.run_explainer(spec, clf, attacked, target, method_params, mlm=mlm)
            out.append(_State(key, attacked, attribution, probs, _demotion(attribution.scores, top)))
        return sorted(out, key=lambda s: s.score, reverse=True)

    initial = _State((), example, original, probabilities, _demotion(original.scores, top))
    best = beam_search(initial, expand, params, progress)
    return AttackResult(
        attack="substitution",
        method=method,
        example=example,
        k=k,
        original=original,
        attacked=best.attribution,
        changed=tuple(a != b for a, b in zip(example.words, best.example.words)),
        original_probabilities=tuple(float(p) for p in probabilities),
        attacked_probabilities=tuple(float(p) for p in best.probabilities),
        params=dataclasses.asdict(params),
        runtime_s=time.perf_counter() - start,
        forward_passes=clf.forward_passes - passes0[0],
        backward_passes=clf.backward_passes - passes0[1],
        mlm_forward_passes=mlm.forward_passes - passes0[2],
        steps=len(best.substitutions),
        substitutions=tuple((i, example.words[i], w) for i, w in best.substitutions),
    )


def beam_search(
    initial: _State,
    expand: Callable[[list[_State]], list[_State]],
    params: SubstitutionAttackParams,
    progress: ProgressFn | None,
) -> _State:
    """Greedy (one state, stop when nothing improves) or beam search over substitution sets; the
    best state seen is returned (the initial one when no substitution is allowed)."""
    width = 1 if params.search == "greedy" else params.beam_width
    beam, best = [initial], initial
    for round_ in range(params.budget):
        if progress is not None:
            progress(round_ / params.budget, f"substitution round {round_ + 1} of {params.budget}")
        expanded = expand(beam)
        if params.search == "greedy":
            expanded = [s for s in expanded if s.score > beam[0].score]
        if not expanded:
            break
        beam = expanded[:width]
        if beam[0].score > best.score:
            best = beam[0]
    return best


# ---------------------------------------------------------------------------------- runs and summaries


def attack_example(
    clf: Classifier,
    example: Example,
    methods: Sequence[str],
    attack: str,
    params: EmbeddingAttackParams | SubstitutionAttackParams,
    *,
    mlm: MaskedLM | None = None,
    explainer_params: dict[str, dict[str, Any]] | None = None,
    progress: ProgressFn | None = None,
) -> dict[str, AttackResult]:
    """Attack each method's explanation of one example; progress is spread over the methods."""
    if attack == "substitution" and mlm is None:
        raise ValueError("the substitution attack needs a masked language model")
    results: dict[str, AttackResult] = {}
    for index, method in enumerate(methods):

        def step(fraction: float, message: str, index: int = index, method: str = method) -> None:
            if progress is not None:
                progress((index + fraction) / len(methods), f"{method}: {message}")

        own = (explainer_params or {}).get(method)
        if attack == "embedding":
            results[method] = embedding_attack(clf, example, method, params, explainer_params=own, progress=step)
        elif attack == "substitution":
            results[method] = substitution_attack(
                clf, example, method, mlm, params, explainer_params=own, progress=step
            )
        else:
            raise ValueError(f"unknown attack {attack!r}; known: {', '.join(ATTACKS)}")
    if progress is not None:
        progress(1.0, "done")
    return results


def summarize(results: Sequence[dict[str, AttackResult]]) -> dict[str, dict[str, Any]]:
    """Per method over examples: each measure's mean and 95% interval, the success rate, the cost,
    and ``fragility_rank`` (1 = the method whose ranking the attack changed most)."""
    methods = list(dict.fromkeys(m for per_example in results for m in per_example))
    summary: dict[str, dict[str, Any]] = {}
    for method in methods:
        runs = [per_example[method] for per_example in results if method in per_example]
        row: dict[str, Any] = {"n": len(runs)}
        for measure in ("rank_change", "topk_sum_change", "probability_change", "spearman"):
            mean, low, high, _ = mean_interval([getattr(r, measure) for r in runs])
            row[measure] = {"mean": _finite(mean), "low": _finite(low), "high": _finite(high)}
        row["abs_probability_change"] = float(np.mean([abs(r.probability_change) for r in runs]))
        row["success_rate"] = float(np.mean([r.success for r in runs]))
        row["runtime_s"] = float(sum(r.runtime_s for r in runs))
        row["forward_passes"] = int(sum(r.forward_passes for r in runs))
        summary[method] = row
    ranked = sorted(methods, key=lambda m: -(summary[m]["rank_change"]["mean"] or 0.0))
    for position, method in enumerate(ranked, start=1):
        summary[method]["fragility_rank"] = position
    return summary


def _finite(value: float) -> float | None:
    return None if not np.isfinite(value) else float(value)
