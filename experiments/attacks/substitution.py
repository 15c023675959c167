"""The substitution attack, a readable variant of the embedding attack (after Ghorbani et al.
2019, arXiv:1710.10547).

It replaces up to ``budget`` words (never the original top-k words) with masked-LM fill-ins,
keeping the predicted class and its probability within ``tolerance``, and searches greedily or
by beam for the substitutions that push the original top-k words furthest down the new
explanation's ranking. Each round explains every candidate that keeps the prediction, or a
seeded random draw of ``explained_per_round`` of them (stochastic greedy, Mirzasoleiman et al.
2015, arXiv:1409.7938; the ``quick`` preset draws 12). Any registered method can be attacked
this way, perturbation methods at their cost; stochastic explainers get the attack's ``seed``.

A fill-in must look like a word where the original does (letters or digits; no bare punctuation
for a word) and, as in TextFooler's word-level check (Jin et al. 2020, arXiv:1907.11932), be
close to the word it replaces: the cosine similarity of the two words' input embeddings in the
attacked classifier (the mean over subwords) at least ``min_similarity``. Those embeddings keep
unrelated words and punctuation apart but not antonyms (good/bad are as close as good/great in
the bundled models), so the kept prediction remains the guard against meaning flips. A word the
tokenizer drops entirely (a control character, say) has no embedding: its fill-ins go unfiltered.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

import explainers
from core.classifier import Classifier, ProgressFn
from core.masked_lm import MaskedLM
from core.params import param, seed_param
from core.types import Attribution, Example
from experiments.attacks.result import AttackResult, k_for
from metrics.agreement import top_k


@dataclass(frozen=True)
class SubstitutionAttackParams:
    budget: int = param(3, "most words replaced", min=1, max=64)
    n_candidates: int = param(8, "masked-LM fill-ins tried per word", min=1, max=100)
    tolerance: float = param(
        0.05,
        "largest allowed change of the predicted class's probability (a regression head: of its score)",
        min=0.0,
        max=1.0,
    )
    search: str = param(
        "greedy", "greedy: best single substitution per round; beam: keep beam_width states", choices=("greedy", "beam")
    )
    beam_width: int = param(3, "states kept per round by the beam search", min=1, max=32)
    top_fraction: float = param(0.15, "k = this share of the words, rounded down, at least 1", min=0.01, max=1.0)
    explained_per_round: int = param(
        0,
        "candidates explained per round, drawn at random among those that keep the prediction "
        "(stochastic greedy); 0: every one",
        min=0,
        max=10_000,
    )
    seed: int = seed_param("seed passed to stochastic explainers and of the candidates drawn each round")
    min_similarity: float = param(
        0.2,
        "smallest cosine similarity between the classifier's input embeddings of a fill-in and of the "
        "word it replaces (mean over subwords); -1 keeps every fill-in",
        min=-1.0,
        max=1.0,
    )


# The quick preset explains 12 drawn candidates per round instead of every one (about 150 for a
# 20-word sentence): the stochastic greedy search of Mirzasoleiman et al. 2015 (arXiv:1409.7938).
PRESETS: dict[str, dict[str, Any]] = {"paper": {}, "quick": {"explained_per_round": 12}}


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


def _word_vector(clf: Classifier, table: torch.Tensor, word: str) -> torch.Tensor:
    """The mean input embedding of ``word``'s subwords in the classifier."""
    return table[list(clf.word_tokens(word))].mean(0)


def _candidates(
    clf: Classifier,
    mlm: MaskedLM,
    example: Example,
    positions: list[int],
    params: SubstitutionAttackParams,
) -> dict[int, list[str]]:
    """Masked-LM fill-ins per position: whole words only, never the original word, a special
    token, punctuation for a word, or a word less similar to the original than
    ``min_similarity`` (see module)."""
    specials = set(mlm.tokenizer.all_special_tokens)
    table = clf.embedding_layer().weight.detach().float()
    out: dict[int, list[str]] = {}
    for position, (fills, _) in zip(positions, mlm.fill_words(example.segments, positions, k=params.n_candidates)):
        original = example.words[position]
        wordlike = any(c.isalnum() for c in original)
        words = []
        for fill in fills:
            text = mlm.token_text(fill.token)
            if fill.token in specials or text.startswith("##") or not text or text.lower() == original.lower():
                continue
            if text in words or (wordlike and not any(c.isalnum() for c in text)):
                continue
            words.append(text)
        if words and params.min_similarity > -1.0 and clf.word_tokens(original):
            with torch.no_grad():
                anchor = _word_vector(clf, table, original)
                fills_table = torch.stack([_word_vector(clf, table, w) for w in words])
                cosine = torch.nn.functional.cosine_similarity(fills_table, anchor[None], dim=-1).tolist()
            words = [w for w, c in zip(words, cosine) if c >= params.min_similarity]
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
    resources: Any = None,
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
    target = clf.head.predicted(probabilities)
    original = explainers.run_explainer(spec, clf, example, target, method_params, mlm=mlm, resources=resources)
    k = k_for(len(example.words), params.top_fraction)
    top = top_k(original.scores, k)
    positions = [i for i in range(len(example.words)) if i not in set(top.tolist())]
    candidates = _candidates(clf, mlm, example, positions, params) if positions else {}
    draws = np.random.default_rng(params.seed)

    def expand(states: list[_State], progress: ProgressFn) -> list[_State]:
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
        kept = [
            (key, attacked, probs)
            for key, attacked, probs in zip(proposals, examples, scored)
            if clf.head.kept(probabilities, probs, target, params.tolerance)
        ]
        if not kept:
            return []
        if 0 < params.explained_per_round < len(kept):
            chosen = sorted(draws.choice(len(kept), size=params.explained_per_round, replace=False))
            kept = [kept[i] for i in chosen]
        # Every kept candidate explained in one call: shared batches for the methods that have them.
        attributions = explainers.run_explainers(
            spec,
            clf,
            [attacked for _, attacked, _ in kept],
            [target] * len(kept),
            method_params,
            mlm=mlm,
            progress=progress,
            resources=resources,
        )
        out = [
            _State(key, attacked, attribution, probs, _demotion(attribution.scores, top))
            for (key, attacked, probs), attribution in zip(kept, attributions)
        ]
        return sorted(out, key=lambda s: s.score, reverse=True)

    initial = _State((), example, original, probabilities, _demotion(original.scores, top))
    best = beam_search(initial, expand, params, progress)
    return AttackResult(
        head=clf.head.kind,
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
    expand: Callable[[list[_State], ProgressFn], list[_State]],
    params: SubstitutionAttackParams,
    progress: ProgressFn | None,
) -> _State:
    """Greedy (one state, stop when nothing improves) or beam search over substitution sets; the
    best state seen is returned (the initial one when no substitution is allowed)."""
    width = 1 if params.search == "greedy" else params.beam_width
    beam, best = [initial], initial
    for round_ in range(params.budget):

        def step(fraction: float, message: str, round_: int = round_) -> None:
            if progress is not None:
                where = f"substitution round {round_ + 1} of {params.budget}"
                progress((round_ + fraction) / params.budget, f"{where}: {message}" if message else where)

        step(0.0, "")
        expanded = expand(beam, step)
        if params.search == "greedy":
            expanded = [s for s in expanded if s.score > beam[0].score]
        if not expanded:
            break
        beam = expanded[:width]
        if beam[0].score > best.score:
            best = beam[0]
    return best
