"""The classifier view: encoding, truncation, the batched scorer and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from core.classifier import Classifier
from core.heads import log2_odds
from core.loaded import LoadedClassifier
from core.types import Example


def test_scorer_dedupes_sorts_and_counts(linear_clf: Classifier, toy_example: Example) -> None:
    encoded = linear_clf.encode(toy_example)
    variants = [encoded.variant, encoded.perturb({3: ()}), encoded.variant, encoded.perturb({0: (), 1: ()})]
    probs = linear_clf.predict_proba(variants)
    assert linear_clf.forward_passes == 3  # the repeated original is scored once
    np.testing.assert_array_equal(probs[0], probs[2])
    np.testing.assert_allclose(probs.sum(1), 1.0)


def test_scorer_is_batch_size_invariant(bert_clf: Classifier, toy_example: Example) -> None:
    encoded = bert_clf.encode(toy_example)
    variants = [encoded.perturb({i: ()}) for i in range(encoded.n_words)]
    reference = bert_clf.predict_proba(variants)
    for batch_size in (1, 3, 7):
        bert_clf.batch_size = batch_size
        np.testing.assert_allclose(bert_clf.predict_proba(variants), reference, rtol=1e-5, atol=1e-7)


def test_perturb_replaces_whole_words(bert_clf: Classifier) -> None:
    example = Example(segments=(("an", "unbelievable", "movie"),))
    encoded = bert_clf.encode(example)
    mask = bert_clf.special_tokens["mask"]
    variant = encoded.perturb({1: (mask,)})
    assert len(variant.input_ids) == len(encoded.input_ids) - 2  # three word pieces became one [MASK]
    assert variant.input_ids[2] == mask
    zeroed = encoded.perturb(zero_words=[1])
    assert zeroed.zero_positions == (2, 3, 4)


def test_zero_embedding_variant_changes_prediction_like_deletion_for_linear_model(
    linear_clf: Classifier, toy_example: Example
) -> None:
    encoded = linear_clf.encode(toy_example)
    great = toy_example.words.index("great")
    zeroed, deleted = linear_clf.predict_proba([encoded.perturb(zero_words=[great]), encoded.perturb({great: ()})])
    np.testing.assert_allclose(zeroed, deleted, atol=1e-7)


def test_fit_example_drops_whole_words_from_the_end(toy_linear_loaded: LoadedClassifier) -> None:
    clf = Classifier(toy_linear_loaded)
    words = ("the", "movie", "was", "great") * 20  # 80 words, the toy allows 64 tokens
    example = Example(segments=(words,), rationale=tuple([1, 0, 0, 0] * 20), rationales=(tuple([1, 0, 0, 0] * 20),))
    fitted, dropped = clf.fit_example(example)
    assert dropped == 80 - 62 and len(fitted.words) == 62
    assert fitted.rationale == example.rationale[:62]
    clf.encode(fitted)
    with pytest.raises(ValueError, match="exceed"):
        clf.encode(example)


def test_fit_example_pairs_cut_the_longer_segment(toy_linear_loaded: LoadedClassifier) -> None:
    clf = Classifier(toy_linear_loaded)
    example = Example(segments=(("a", "man") * 40, ("a", "dog", "runs")))
    fitted, dropped = clf.fit_example(example)
    assert fitted.segments[1] == ("a", "dog", "runs")
    assert len(fitted.segments[0]) == 64 - 3 - 3 and dropped == 80 - 58


def test_bad_input_is_refused_clearly(linear_clf: Classifier) -> None:
    with pytest.raises(ValueError, match="empty"):
        linear_clf.check_example(Example(segments=((),)))
    pair_model = Classifier(
        LoadedClassifier("pairs", linear_clf.model, linear_clf.tokenizer, linear_clf.device, pair=True)
    )
    with pytest.raises(ValueError, match="premise and a hypothesis"):
        pair_model.check_example(Example(segments=(("one", "text"),)))


def test_log2_odds() -> None:
    assert log2_odds(0.5) == 0.0
    assert log2_odds(0.8) == pytest.approx(2.0)
    assert np.isfinite(log2_odds(1.0))
