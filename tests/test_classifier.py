"""The classifier view: encoding, truncation, the batched scorer and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from core.classifier import Classifier
from core.encoding import Encoded, Variant
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


def _perturb_token_by_token(encoded: Encoded, replace: dict[int, tuple[int, ...]], zero: set[int]) -> Variant:
    """The variant built one token at a time: the reference ``Encoded.perturb`` must equal."""
    ids, types, zeroed = [], [], []
    for t, (token, segment, word) in enumerate(zip(encoded.input_ids, encoded.token_type_ids, encoded.word_ids)):
        if word in replace:
            if t == 0 or encoded.word_ids[t - 1] != word:
                ids += replace[word]
                types += [segment] * len(replace[word])
            continue
        if word in zero:
            zeroed.append(len(ids))
        ids.append(token)
        types.append(segment)
    return Variant(tuple(ids), tuple(types), tuple(zeroed))


def test_perturb_equals_a_token_by_token_build_on_random_removals(bert_clf: Classifier) -> None:
    pair = Example(segments=(("an", "unbelievable", "movie", "indeed"), ("the", "film", "was", "underwhelming")))
    single = Example(segments=(("tremendously", "good", "and", "unbelievably", "short"),))
    rng = np.random.default_rng(0)
    mask = bert_clf.special_tokens["mask"]
    for example in (pair, single):
        encoded = bert_clf.encode(example)
        for _ in range(200):
            words = rng.permutation(encoded.n_words)
            k, z = rng.integers(0, encoded.n_words + 1, size=2)
            replace = {
                int(w): tuple(int(t) for t in rng.choice([mask, 7, 8], size=rng.integers(0, 3))) for w in words[:k]
            }
            zero = {int(w) for w in rng.choice(encoded.n_words, size=z, replace=False)}
            assert encoded.perturb(replace, sorted(zero)) == _perturb_token_by_token(encoded, replace, zero)


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
    # a very confident model's probabilities still differ (clipped at 1 - 1e-7 they were equal)
    assert log2_odds(1 - 1e-12) - log2_odds(1 - 1e-9) == pytest.approx(np.log2(1e3), abs=1e-3)
