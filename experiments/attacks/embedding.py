"""The embedding attack of the thesis "Assessing the Interpretability of Large Language Models"
(Oxford MSc, 2022, sections 2.3 and 3.5), after Ghorbani et al. 2019, "Interpretation of neural
networks is fragile" (arXiv:1710.10547).

A perturbation ``delta`` of the input word embeddings (special tokens untouched) with
``|delta|_inf <= epsilon``, found by gradient ascent (``torch.optim.SGD`` or ``torch.optim.Adam``
with ``maximize=True``) on one of two objectives: **unconstrained** (maximise the attack distance
``D = -sum_{i in topk(a_x)} a_{x+delta, i}``; a step that changes the predicted class is rejected
and retried at half the size) or **constrained** (the thesis's own,
``alpha * D - beta * (p(x) - p(x + delta))^2`` with ``p`` the originally predicted class's
probability). The explanation is differentiated with respect to ``delta`` (double
back-propagation, ``explainers.word_scores.word_scores(create_graph=True)``), so only the
gradient methods can be attacked. The perturbed embeddings are also shown as their nearest
vocabulary words (cosine similarity, special tokens excluded). Deterministic: the ascent starts
from ``delta = 0``; the shared model is never modified.

A rejected step's retries (each half the size of the one before) are screened in one forward
pass before any is explained (``_ascend``), so a run of rejections near the class boundary costs
one batched forward pass instead of one explanation and double back-propagation per retry.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

import explainers
from core.classifier import Classifier, ProgressFn
from core.encoding import Encoded
from core.params import param
from core.types import Attribution, Example
from experiments.attacks.result import AttackResult, k_for
from explainers.base import make_attribution
from explainers.gradients import embed
from explainers.word_scores import word_scores
from metrics.agreement import top_k

OBJECTIVES = ("unconstrained", "constrained")
# After a rejected step, this many retries (each half the size of the one before) are screened
# in one forward pass (``_ascend``); 0 evaluates every try in full.
_SCREENED = 8


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


# The paper's settings, and fewer steps for interactive use on a CPU.
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "quick": {"steps": 60, "halve_every": 25, "patience": 10},
}


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


def embedding_attack(
    clf: Classifier,
    example: Example,
    method: str,
    params: EmbeddingAttackParams | None = None,
    *,
    explainer_params: dict[str, Any] | None = None,
    progress: ProgressFn | None = None,
) -> AttackResult:
    """The thesis's attack on a gradient method's explanation of the predicted class (see
    module)."""
    params = params or EmbeddingAttackParams()
    spec = explainers.get(method)
    if not spec.gradient:
        differentiable = ", ".join(k for k, s in explainers.REGISTRY.items() if s.gradient)
        raise ValueError(f"{method!r} is not differentiable; the embedding attack takes {differentiable}")
    method_params = spec.make_params(explainer_params)
    example, _ = clf.fit_example(example)
    encoded = clf.encode(example)
    passes0 = clf.forward_passes, clf.backward_passes
    start = time.perf_counter()

    base = embed(clf, encoded).float()
    original_outputs = clf.predict_proba([encoded.variant])[0]
    target = clf.head.predicted(original_outputs)

    def explain(delta: torch.Tensor, attack_time: bool) -> tuple[torch.Tensor, torch.Tensor]:
        n_steps = params.ig_n_steps if attack_time else None
        return word_scores(clf, encoded, base + delta, target, method_params, create_graph=attack_time, n_steps=n_steps)

    original_scores, original_probs = explain(torch.zeros_like(base), attack_time=False)
    k = k_for(encoded.n_words, params.top_fraction)
    top = torch.as_tensor(top_k(original_scores.detach().cpu().numpy(), k).copy())

    def screen(deltas: torch.Tensor) -> list[tuple[bool, float]]:
        """For each candidate delta (K, seq, dim): is the prediction kept, and the target's output;
        one forward pass without a gradient for all of them."""
        with torch.no_grad():
            outputs = clf.head.outputs(clf.forward_embeds(base + deltas, encoded.variant).float())
        return [(clf.head.kept(original_outputs, row.cpu().numpy(), target), float(row[target])) for row in outputs]

    best, trace, steps = _ascend(
        explain,
        base,
        encoded,
        target,
        top,
        float(original_probs[target].detach()),
        params,
        progress,
        lambda probs: clf.head.kept(original_outputs, probs.cpu().numpy(), target),
        screen,
    )

    attacked_scores, attacked_probs = explain(best, attack_time=False)
    attacked_words, changed = _nearest_words(clf, encoded, (base + best)[0], best[0], example.words)
    original = _attribution(example, target, original_scores, method, method_params)
    attacked = dataclasses.replace(
        _attribution(example, target, attacked_scores, method, method_params), words=attacked_words
    )
    return AttackResult(
        head=clf.head.kind,
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
    keeps_prediction: Callable[[torch.Tensor], bool],
    screen: Callable[[torch.Tensor], list[tuple[bool, float]]],
) -> tuple[torch.Tensor, dict[str, tuple[float, ...]], int]:
    """Projected gradient ascent on the attack objective; returns the best delta, the trace and
    the number of tried steps.

    Unconstrained: an iterate that loses the prediction (``keeps_prediction``: core.heads) is
    rejected and the step retried at half the size, each try using up a step; a kept iterate
    puts the size back to the schedule's, and the ascent ends once 11 tries in a row are
    rejected (the size below 2^-10 of the schedule's). After a rejection
    the next ``_SCREENED`` tries (sizes halving) are screened together (``screen``: one forward
    pass, no gradient) and only the first that keeps the prediction is evaluated (explanation and
    its gradient by double back-propagation); the tries screened out are the ones a try-by-try
    ascent would have rejected, so the iterates, the best delta and the step count are the same
    (a screened-out try's trace has its probability and no distance or objective: NaN).
    Constrained: every iterate counts. The best iterate (by objective) is returned.
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
            keeps_prediction(probs),
            grad * word_mask,
        )

    # The step of torch's optimiser, undone when the unconstrained objective rejects it: the
    # direction comes from the last kept iterate's gradient, as in plain projected ascent.
    delta = torch.zeros_like(base, requires_grad=True)
    optimizer_cls = torch.optim.Adam if params.optimizer == "adam" else torch.optim.SGD
    optimizer = optimizer_cls([delta], lr=params.lr, maximize=True)

    def stepped(step: int, scale: float, grad: torch.Tensor) -> None:
        """``delta`` after the optimiser's step number ``step`` at ``scale`` of its size,
        projected."""
        optimizer.param_groups[0]["lr"] = params.lr * 0.5 ** (step // params.halve_every) * scale
        delta.grad = grad
        optimizer.step()
        with torch.no_grad():
            delta.copy_(delta.clamp(-params.epsilon, params.epsilon) * word_mask)

    def restore(kept_delta: torch.Tensor, kept_state: dict) -> None:
        optimizer.load_state_dict(copy.deepcopy(kept_state))
        with torch.no_grad():
            delta.copy_(kept_delta)

    objective, distance, probability, _, grad = evaluate(delta)
    best, best_objective = delta.detach().clone(), objective
    trace: dict[str, list[float]] = {"objective": [objective], "distance": [distance], "probability": [probability]}
    scale, still, step, rejected = 1.0, 0, 0, False
    while step < params.steps:
        kept_delta, kept_state = delta.detach().clone(), copy.deepcopy(optimizer.state_dict())
        # the tries a try-by-try ascent could still make: within the step budget, above the smallest size
        count = min(_SCREENED, params.steps - step, 1 + int(math.log2(scale / 2**-10))) if rejected else 0
        if count:
            candidates = []
            for j in range(count):
                stepped(step + j, scale * 0.5**j, grad)
                candidates.append(delta.detach().clone())
                restore(kept_delta, kept_state)
            outcomes = screen(torch.cat(candidates))
            passed = next((j for j, (kept, _) in enumerate(outcomes) if kept), len(outcomes))
            for _, p in outcomes[:passed]:  # the tries a try-by-try ascent would have rejected
                for key, value in (("objective", math.nan), ("distance", math.nan), ("probability", p)):
                    trace[key].append(value)
            step, scale = step + passed, scale * 0.5**passed
            if scale < 2**-10 or step >= params.steps:
                break
            if passed == len(outcomes):
                continue
        stepped(step, scale, grad)
        objective, distance, probability, kept, new_grad = evaluate(delta)
        step += 1
        for key, value in (("objective", objective), ("distance", distance), ("probability", probability)):
            trace[key].append(value)
        if progress is not None and step % 5 == 1:
            progress(step / params.steps, f"step {step}: distance {distance:.4g}, p {probability:.3f}")
        rejected = params.objective == "unconstrained" and not kept
        if rejected:
            scale *= 0.5  # reject the class-changing step and retry from the last kept delta
            restore(kept_delta, kept_state)
            if scale < 2**-10:
                break
            continue
        scale = 1.0  # kept: the next step takes the schedule's full size again
        moved = float((delta.detach() - kept_delta).abs().max())
        grad = new_grad
        if objective > best_objective:
            best, best_objective = delta.detach().clone(), objective
        still = still + 1 if moved < params.stop_delta else 0
        if still >= params.patience:
            break
    return best, {key: tuple(values) for key, values in trace.items()}, step


def _attribution(example: Example, target: int, scores: torch.Tensor, method: str, method_params: Any) -> Attribution:
    attribution = make_attribution(example, target, scores.detach().cpu().double().numpy())
    return dataclasses.replace(attribution, method=method, params=dataclasses.asdict(method_params))
