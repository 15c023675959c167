"""The time estimate the adversarial page shows before an attack (``services.estimate_attack``):
its count by hand on the toy classifier, and a bound on the passes a real substitution attack makes."""

from __future__ import annotations

import pytest

import services
from core.classifier import Classifier
from experiments.attacks import make_params, substitution_attack
from tests.test_adversarial import FakeMLM


@pytest.fixture
def unit_rates(monkeypatch, toy_linear_loaded):
    """One pass per second and a step of 10 ms, so the estimate's seconds are its passes."""
    monkeypatch.setattr(services.models, "loaded", lambda name: toy_linear_loaded)
    monkeypatch.setattr(services.estimates, "_forward_rate", lambda model, key, example: 1.0)
    monkeypatch.setattr(services.estimates, "_step_seconds", lambda model, key, example: 0.01)


def test_substitution_passes_by_hand(unit_rates, toy_example):
    # 10 words, k = 1 (15%), so 9 words open to substitution; greedy, 3 rounds of 8 fill-ins per
    # open word: 72, 64 and 56 candidates scored; the quick preset explains 12 of them a round.
    seconds = services.estimate_attack("toy", [toy_example], ["loo_empty"], "substitution", {}, "quick", {})
    loo = 10 + 1  # leave-one-out's passes on 10 words
    assert seconds == pytest.approx(loo * (1 + 3 * 12) + (1 + 72 + 64 + 56 + 9))


def test_beam_search_scores_each_state_s_candidates(unit_rates, toy_example):
    beam = {"search": "beam", "beam_width": 2, "budget": 2, "explained_per_round": 0}
    seconds = services.estimate_attack("toy", [toy_example], ["saliency"], "substitution", beam, "paper", {})
    scored = 2 * 9 * 8 + 2 * 8 * 8  # two states, 9 then 8 open words, 8 fill-ins each
    assert seconds == pytest.approx(2 * (1 + scored) + (1 + scored + 9))  # saliency: 1 forward + 1 backward


def test_the_estimate_bounds_a_real_substitution_attack(unit_rates, toy_linear_loaded, toy_example):
    clf = Classifier(toy_linear_loaded)
    overrides = {"budget": 2, "explained_per_round": 0, "tolerance": 0.5, "min_similarity": -1.0}
    mlm = FakeMLM(["good", "film", "great", "fun"])
    result = substitution_attack(clf, toy_example, "loo_empty", mlm, make_params("substitution", "paper", overrides))
    made = result.forward_passes + result.backward_passes + result.mlm_forward_passes
    estimate = services.estimate_attack("toy", [toy_example], ["loo_empty"], "substitution", overrides, "paper", {})
    assert result.steps == 2 and 0 < made <= estimate


def test_embedding_attack_steps_weighed_by_integrated_gradients_path_points(unit_rates, toy_example):
    seconds = services.estimate_attack(
        "toy", [toy_example, toy_example], ["saliency", "integrated_gradients"], "embedding", {}, "quick", {}
    )
    per_step = 0.01 * services.estimates.ATTACK_STEP_COST
    ig = 1 + 7 * 0.4  # 8 path points, each past the first 0.4 of a row
    assert seconds == pytest.approx(2 * 60 * per_step * (1 + ig))


def test_a_slice_is_timed_once_at_its_median_example_and_scaled_by_tokens(monkeypatch, toy_linear_loaded):
    from core.types import Example

    monkeypatch.setattr(services.models, "loaded", lambda name: toy_linear_loaded)
    timed: list[tuple[str, ...]] = []
    monkeypatch.setattr(
        services.estimates, "_step_seconds", lambda model, key, example: timed.append(example.words) or 0.01
    )
    short, middle, long = (Example(segments=(("good",) * n,), id=f"toy/{n}") for n in (3, 6, 12))
    seconds = services.estimate_attack("toy", [long, short, middle], ["saliency"], "embedding", {}, "quick", {})
    assert set(timed) == {middle.words}
    clf = Classifier(toy_linear_loaded)
    tokens = [clf.token_count(e) for e in (long, short, middle)]
    per_example = 60 * services.estimates.ATTACK_STEP_COST * 0.01
    assert seconds == pytest.approx(per_example * sum(tokens) / clf.token_count(middle))


def test_empty_text_has_no_estimate(unit_rates):
    from core.types import Example

    empty = Example(segments=((),), id="toy/empty")
    with pytest.raises(ValueError, match="no text to time"):
        services.estimate_attack("toy", [empty], ["saliency"], "embedding", {}, "quick", {})
    with pytest.raises(ValueError, match="no text to time"):
        services.estimate_slice("toy", [empty], ["loo_empty"], {}, [])
