"""Several examples explained together give each example what it gets alone.

The one-pass gradient and attention methods run one padded, attention-masked forward/backward
for several examples; the one-call perturbation methods pool their variants in the scorer's
batches (explainers/pooling.py). Scores equal one-by-one runs within 1e-5 and every example is
charged exactly its own passes, on the toy BERT and on the bundled single-text and pair models,
with examples of different lengths."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import explainers
from core.classifier import Classifier
from core.datasets import split_words
from core.loaded import LoadedClassifier, load_classifier
from core.types import Attribution, Example
from engine.evaluate import evaluate_slice, metric_params
from engine.explain import Refused, _each_or_alone, explain_example, explain_examples
from engine.slice_report import metric_values
from tests.test_explainers import _fast_params, toy_mlm  # noqa: F401 - toy_mlm is a fixture
from tests.toy import toy_bert_head

BATCHED = [key for key, spec in explainers.REGISTRY.items() if spec.explain_batch is not None]
TOY = [
    Example(segments=(("the", "film", "was", "unbelievable", "and", "fun"),), id="toy/a"),
    Example(segments=(("bad",),), id="toy/b"),
    Example(segments=(("the", "movie", "was", "great", "but", "the", "plot", "was", "bad", "."),), id="toy/c"),
]
SST2 = [
    Example(segments=(split_words("a gorgeous , witty and seductive film ."),), id="sst2/a"),
    Example(segments=(split_words("it 's a bore ."),), id="sst2/b"),
    Example(
        segments=(split_words("the plot drags and the jokes fall flat , yet the actors never stop trying ."),),
        id="sst2/c",
    ),
]
ESNLI = [
    Example(segments=(("a", "man", "plays", "a", "guitar", "."), ("a", "man", "plays", "music", ".")), id="esnli/a"),
    Example(segments=(("two", "dogs", "run"), ("the", "animals", "are", "sleeping", "on", "a", "sofa")), id="esnli/b"),
    Example(segments=(("a", "woman", "is", "outside", "."), ("nobody", "is", "outside")), id="esnli/c"),
]


def compare(loaded: LoadedClassifier, key: str, examples: list[Example], targets: list[int], batch_size: int) -> None:
    """``run_explainers`` on all examples against ``run_explainer`` on each: scores, subword
    scores and passes per example, and the request's counters."""
    spec = explainers.get(key)
    params = _fast_params(spec, 3)
    alone = [
        explainers.run_explainer(spec, Classifier(loaded, batch_size=batch_size), e, t, params)
        for e, t in zip(examples, targets, strict=True)
    ]
    clf = Classifier(loaded, batch_size=batch_size)
    together = explainers.run_explainers(spec, clf, examples, targets, params)
    for single, batched in zip(alone, together, strict=True):
        np.testing.assert_allclose(batched.scores, single.scores, rtol=1e-5, atol=1e-5, err_msg=key)
        if single.subword_scores is not None:
            np.testing.assert_allclose(batched.subword_scores, single.subword_scores, rtol=1e-5, atol=1e-5)
        assert (batched.forward_passes, batched.backward_passes) == (single.forward_passes, single.backward_passes)
        assert batched.words == single.words and batched.target == single.target and batched.method == key
    assert clf.forward_passes == sum(a.forward_passes for a in alone)
    assert clf.backward_passes == sum(a.backward_passes for a in alone)


def toy_cases() -> list[tuple[str, str]]:
    """Every batched method on the linear toy (which has no attention) and the toy BERT. The
    random toy BERT's output barely moves when words go (Var f about 1e-12), so Sobol's indices
    there are a ratio of float noise; Sobol is checked on the linear toy and the bundled models."""
    cases = [("linear", key) for key in BATCHED if not explainers.get(key).needs_attention_weights]
    return cases + [("bert", key) for key in BATCHED if key != "sobol"]


@pytest.mark.parametrize(("toy", "key"), toy_cases())
@pytest.mark.parametrize("batch_size", [2, 64])
def test_batched_methods_equal_one_by_one_on_the_toys(
    toy: str, key: str, batch_size: int, toy_bert_loaded, toy_linear_loaded
) -> None:
    loaded = toy_bert_loaded if toy == "bert" else toy_linear_loaded
    compare(loaded, key, TOY, [1, 0, 1], batch_size)


@pytest.fixture(scope="module")
def sst2() -> LoadedClassifier:
    return load_classifier("minilm-sst2")


@pytest.fixture(scope="module")
def esnli() -> LoadedClassifier:
    return load_classifier("minilm-esnli")


@pytest.mark.parametrize("key", BATCHED)
def test_batched_methods_equal_one_by_one_on_bundled_models(key: str, sst2, esnli) -> None:
    compare(sst2, key, SST2, [1, 0, 0], 64)
    compare(esnli, key, ESNLI, [0, 2, 1], 64)


def test_the_families_are_batched() -> None:
    families = {explainers.get(key).family for key in BATCHED}
    assert {"gradient", "attention", "occlusion", "LIME", "Sobol", "leave-one-out"} <= families
    assert {
        "saliency",
        "grad_x_input",
        "integrated_gradients",
        "deeplift",
        "attention_mean",
        "attention_rollout",
    } <= set(BATCHED)


def test_one_pass_methods_take_one_forward_backward_for_several_examples(toy_bert_loaded) -> None:
    """Three examples, batch size 64: one padded pass for all three (counted once per example)."""
    calls = []
    model = toy_bert_loaded.logits_model  # the module of logits-only passes
    handle = model.register_forward_pre_hook(lambda module, args, kwargs: calls.append(kwargs), with_kwargs=True)
    try:
        clf = Classifier(toy_bert_loaded)
        result = explainers.run_explainers(explainers.get("saliency"), clf, TOY, [1, 0, 1])
    finally:
        handle.remove()
    assert len(calls) == 1 and calls[0]["inputs_embeds"].shape[:2] == (3, 12)
    assert calls[0]["attention_mask"].sum(dim=1).tolist() == [3, 10, 12]  # ordered by length
    assert [(a.forward_passes, a.backward_passes) for a in result] == [(1, 1)] * 3


def test_deeplift_explains_several_examples_in_one_call(toy_bert_loaded) -> None:
    """Captum's DeepLift on three examples: the inputs and baselines of all three in one forward
    and backward, the deltas from that pass's outputs, each example with its own delta."""
    rows: list[int] = []  # the private copy of the module tree takes this hook with it
    handle = toy_bert_loaded.logits_model.register_forward_pre_hook(
        lambda module, args, kwargs: rows.append(kwargs["inputs_embeds"].shape[0]), with_kwargs=True
    )
    spec = explainers.get("deeplift")
    try:
        together = explainers.run_explainers(spec, Classifier(toy_bert_loaded), TOY, [1, 0, 1])
        assert rows == [6]
        alone = [explainers.run_explainer(spec, Classifier(toy_bert_loaded), e, t) for e, t in zip(TOY, [1, 0, 1])]
    finally:
        handle.remove()
    for batched, single in zip(together, alone, strict=True):
        assert batched.extras["convergence_delta"] == pytest.approx(single.extras["convergence_delta"], abs=1e-6)
        assert (batched.forward_passes, batched.backward_passes) == (2, 2)


def test_a_pass_that_names_no_example_inside_a_batch_is_refused(toy_bert_loaded) -> None:
    clf = Classifier(toy_bert_loaded)
    variant = clf.encode(TOY[0]).variant
    with clf.per_example(2), pytest.raises(RuntimeError, match="must name the example of each row"):
        clf.forward_embeds(clf.input_embeddings(torch.tensor([variant.input_ids])), variant)
    with clf.per_example(1) as ledger:
        clf.predict_proba([variant])
    assert ledger.forward == [1]


def test_a_refused_example_is_named_and_the_others_are_explained(linear_clf) -> None:
    def run(chosen: list[int], progress) -> list[Attribution]:
        linear_clf.predict_proba([linear_clf.encode(TOY[i]).variant for i in chosen])  # passes spent
        progress(0.5, "half")
        if 1 in chosen:
            raise ValueError("example 1 is refused")
        progress(1.0, "done")
        return [Attribution("m", f"e{i}", 0, ("w",), np.zeros(1), forward_passes=1) for i in chosen]

    seen: list[float] = []
    outcomes = _each_or_alone(linear_clf, run, 3, True, lambda fraction, message: seen.append(fraction))
    assert outcomes[1] == Refused("example 1 is refused", forward_passes=1)
    assert [a.example_id for a in (outcomes[0], outcomes[2]) if isinstance(a, Attribution)] == ["e0", "e2"]
    assert linear_clf.forward_passes == 3 + 3  # the refused batch, then one by one
    # One by one, each example's progress is its third of the method's: it restarted at 0 for each.
    assert seen == [0.5, 1 / 6, 1 / 3, 0.5, 5 / 6, 1.0]


def test_a_method_run_one_example_at_a_time_moves_the_bar_forward_only(toy_bert_loaded, toy_mlm) -> None:  # noqa: F811
    seen: list[float] = []
    clf = Classifier(toy_bert_loaded, batch_size=4)
    explain_examples(clf, TOY, ["im", "saliency"], params={"im": {"k": 2}}, mlm=toy_mlm,
                     progress=lambda fraction, message: seen.append(fraction))  # fmt: skip
    assert seen == sorted(seen) and seen[-1] == 1.0


def test_explain_examples_equals_explain_example_for_every_method(toy_bert_loaded, toy_mlm) -> None:  # noqa: F811
    methods = list(explainers.REGISTRY)
    params = {key: {k: v for k, v in vars(_fast_params(explainers.get(key), 3)).items()} for key in methods}
    clf = Classifier(toy_bert_loaded, batch_size=4)
    together = explain_examples(clf, TOY, methods, targets=[None, 0, None], params=params, mlm=toy_mlm)
    for example, target, batched in zip(TOY, [None, 0, None], together, strict=True):
        single = explain_example(Classifier(toy_bert_loaded, batch_size=4), example, methods, target=target,
                                 params=params, mlm=toy_mlm)  # fmt: skip
        assert batched.target == single.target and batched.prediction.predicted == single.prediction.predicted
        np.testing.assert_allclose(batched.prediction.probabilities, single.prediction.probabilities, atol=1e-7)
        assert not batched.errors and not single.errors
        for key in methods:
            np.testing.assert_allclose(
                batched.attributions[key].scores, single.attributions[key].scores, rtol=1e-5, atol=1e-5, err_msg=key
            )
            assert batched.attributions[key].forward_passes == single.attributions[key].forward_passes, key


@pytest.mark.parametrize("head", ["single_label", "multi_label", "regression"])
def test_a_request_with_a_gradient_method_predicts_from_its_pass(head, toy_bert_loaded) -> None:
    """Saliency reads the prediction off its own forward pass: the request spends no prediction
    pass of its own, and the prediction and every method's target and scores are the ones a
    request without it (a scorer prediction first) gives."""
    loaded = toy_bert_loaded if head == "single_label" else toy_bert_head(head)
    methods = ["loo_empty", "saliency", "grad_x_input"]
    with_gradient = explain_examples(Classifier(loaded), TOY, methods, targets=[None, 0, None])
    without = explain_examples(Classifier(loaded), TOY, ["loo_empty"], targets=[None, 0, None])
    alone = [explain_example(Classifier(loaded), e, ["saliency"], target=t) for e, t in zip(TOY, [None, 0, None])]
    for folded, scored, single, forced in zip(with_gradient, without, alone, [None, 0, None], strict=True):
        assert list(folded.attributions) == methods  # in the order asked, though saliency ran first
        assert folded.prediction.predicted == scored.prediction.predicted and folded.prediction.head == head
        np.testing.assert_allclose(folded.prediction.probabilities, scored.prediction.probabilities, atol=1e-6)
        assert (
            folded.target
            == scored.target
            == single.target
            == (forced if forced is not None else scored.prediction.predicted)
        )
        np.testing.assert_allclose(
            folded.attributions["loo_empty"].scores, scored.attributions["loo_empty"].scores, rtol=1e-5, atol=1e-6
        )
        np.testing.assert_allclose(
            single.attributions["saliency"].scores, folded.attributions["saliency"].scores, rtol=1e-5
        )
        assert single.forward_passes == 1  # the gradient pass is the prediction
        assert folded.forward_passes == sum(a.forward_passes for a in folded.attributions.values())
        assert scored.forward_passes == 1 + scored.attributions["loo_empty"].forward_passes


def test_an_example_the_predicting_method_refuses_gets_its_own_prediction_pass(toy_bert_loaded, monkeypatch) -> None:
    from explainers import gradients

    original = gradients._gradients

    def refuse_the_second(clf, encodings, targets, output):
        if len(encodings) > 1 or encodings[0].n_words == 1:  # the batch, then TOY[1] alone
            raise ValueError("refused")
        return original(clf, encodings, targets, output)

    monkeypatch.setattr(gradients, "_gradients", refuse_the_second)
    clf = Classifier(toy_bert_loaded)
    explained = explain_examples(clf, TOY, ["saliency", "loo_empty"])
    reference = explain_examples(Classifier(toy_bert_loaded), TOY, ["loo_empty"])
    assert explained[1].errors == {"saliency": "refused"} and "saliency" in explained[0].attributions
    for got, expected in zip(explained, reference, strict=True):
        assert got.prediction.predicted == expected.prediction.predicted
        np.testing.assert_allclose(got.prediction.probabilities, expected.prediction.probabilities, atol=1e-6)
    assert explained[1].forward_passes == 1 + explained[1].attributions["loo_empty"].forward_passes


def test_a_slice_gives_the_same_metrics_and_passes_whatever_the_group(toy_bert_loaded) -> None:
    methods = ["loo_empty", "saliency", "grad_x_input", "attention_rollout", "occlusion", "integrated_gradients"]
    params = metric_params(["deletion", "comprehensiveness"], {"deletion": {"removal": "delete"}})
    examples = TOY * 2
    clfs = [Classifier(toy_bert_loaded), Classifier(toy_bert_loaded)]
    runs = [
        evaluate_slice(clf, examples, methods, params, method_params={}, group=group)
        for clf, group in zip(clfs, (1, 4), strict=True)
    ]
    one, grouped = (metric_values(run) for run in runs)
    for method in methods:
        for metric in params:
            np.testing.assert_allclose(grouped[method][metric], one[method][metric], rtol=1e-5, atol=1e-5)
    assert runs[0].forward_passes == runs[1].forward_passes == clfs[0].forward_passes == clfs[1].forward_passes
    assert [r.position for r in runs[1].results] == list(range(len(examples)))


def test_a_group_s_metrics_are_one_scorer_call(toy_bert_loaded, monkeypatch) -> None:
    """The faithfulness variants of a group's examples go to the scorer together: one call for
    the group instead of one per example, fewer model calls at a GPU's batch size, the same passes."""
    params = metric_params(["deletion", "insertion", "comprehensiveness", "sufficiency"])
    examples = TOY * 2
    clfs = [Classifier(toy_bert_loaded, batch_size=256) for _ in range(2)]
    calls: list[int] = []
    original = Classifier.predict_proba_groups

    def counted(self, groups, progress=None):
        calls.append(len(groups))
        return original(self, groups, progress)

    monkeypatch.setattr(Classifier, "predict_proba_groups", counted)
    one = evaluate_slice(clfs[0], examples, ["loo_empty", "random"], params, seed=0, group=1)
    calls_one, calls[:] = list(calls), []
    grouped = evaluate_slice(clfs[1], examples, ["loo_empty", "random"], params, seed=0, group=6)
    assert calls_one.count(1) == 3 * len(examples)  # per example: prediction, loo_empty, metrics
    assert calls == [6, 6, 6]  # for the group: prediction, loo_empty, metrics
    assert clfs[1].model_calls == 3 < clfs[0].model_calls == 3 * len(examples)
    assert one.forward_passes == grouped.forward_passes
    np.testing.assert_allclose(
        metric_values(grouped)["loo_empty"]["deletion"], metric_values(one)["loo_empty"]["deletion"], rtol=1e-9
    )


def test_the_benchmark_explains_groups_with_each_example_s_own_passes(toy_bert_loaded) -> None:
    from engine.bench import run_bench

    methods = ["saliency", "attention_mean", "loo_empty"]
    one, grouped = (run_bench(Classifier(toy_bert_loaded), TOY, methods, group=group) for group in (1, 3))
    assert (one["group"], grouped["group"]) == (1, 3)
    for key in methods:
        for count in ("forward_passes", "backward_passes"):
            assert grouped["methods"][key][count] == one["methods"][key][count], (key, count)
    assert grouped["methods"]["saliency"]["forward_passes"] == 1
    # One padded pass for the three examples, against one pass each.
    assert one["methods"]["saliency"]["model_calls"] == 1
    assert grouped["methods"]["saliency"]["model_calls"] == pytest.approx(1 / 3)


def test_sobol_does_not_depend_on_the_batch_size(toy_linear_loaded) -> None:
    spec = explainers.get("sobol")
    params = _fast_params(spec, 3)
    first, second = (
        explainers.run_explainer(spec, Classifier(toy_linear_loaded, batch_size=size), TOY[2], 1, params)
        for size in (1, 7)
    )
    assert first.extras["variance"] > 1e-3  # the linear toy's output moves with its planted words
    np.testing.assert_allclose(first.scores, second.scores, rtol=1e-5, atol=1e-5)


def test_length_groups_are_pieces_of_the_length_order_spread_over_every_length() -> None:
    """Every example lands in one group; the groups are consecutive pieces of the slice sorted by
    length (only the last, the longest, may hold fewer), and the groups explained first span
    short, middle and long examples."""
    from engine.evaluate import length_groups

    lengths = [5, 1, 9, 3, 7, 2, 8, 4, 6, 10, 1, 2, 12, 11, 0, 13]
    groups = length_groups(list(range(len(lengths))), lengths, 3)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    assert [len(g) for g in groups] == [3, 3, 3, 3, 3, 1]
    by_length = sorted(groups[:-1], key=lambda g: min(lengths[i] for i in g)) + groups[-1:]
    assert [lengths[i] for g in by_length for i in g] == sorted(lengths)
    rank = [by_length.index(g) for g in groups]
    assert rank[-1] == 5 and set(rank[:3]) & {0, 1} and set(rank[:3]) & {3, 4}  # both ends early
    assert length_groups([4, 2, 0], lengths, 8) == [[0, 4, 2]]  # only the indices given, shortest first


def test_spread_leaves_no_gap_over_twice_the_even_spacing_in_any_prefix():
    from engine.evaluate import spread

    for count in range(1, 160):
        order = spread(count)
        assert sorted(order) == list(range(count))
        for taken in range(1, count + 1):
            chosen = sorted(order[:taken])
            gaps = [b - a for a, b in itertools.pairwise(chosen)] + [count - chosen[-1] + chosen[0]]
            assert max(gaps) <= 2 * count / taken, (count, taken)


def test_token_count_is_the_encoded_length_and_needs_no_cut(bert_clf) -> None:
    example = Example(segments=(("the", "movie", "was", "great"),))
    assert bert_clf.token_count(example) == len(bert_clf.encode(example).input_ids)
    long = Example(segments=(("great",) * (bert_clf.loaded.max_length + 10),))
    assert bert_clf.token_count(long) == bert_clf.loaded.max_length + 12  # [CLS] ... [SEP], nothing cut
    assert bert_clf.token_count(Example(segments=((),))) == 0


def test_a_request_s_methods_share_the_passes_they_have_in_common(toy_bert_loaded) -> None:
    """Saliency and gradient x input read one gradient pass, the two attention methods one
    attention pass; each gets the scores it gets alone, and the one that reads a shared pass is
    charged none. Other settings of the output to differentiate make another pass."""
    methods = ["saliency", "grad_x_input", "attention_mean", "attention_rollout"]
    clf = Classifier(toy_bert_loaded)
    explained = explain_examples(clf, TOY, methods)
    assert (clf.forward_passes, clf.backward_passes, clf.model_calls) == (2 * len(TOY), len(TOY), 2)
    for explanation in explained:
        attributions = explanation.attributions
        assert [attributions[k].forward_passes for k in methods] == [1, 0, 1, 0]
        assert explanation.forward_passes == 2
        for key in methods:
            target = explanation.target
            alone = explainers.run_explainer(
                explainers.get(key), Classifier(toy_bert_loaded), explanation.example, target
            )
            np.testing.assert_allclose(attributions[key].scores, alone.scores, rtol=1e-6, atol=1e-7, err_msg=key)
    other = Classifier(toy_bert_loaded)
    explain_examples(other, TOY, ["saliency", "grad_x_input"], params={"grad_x_input": {"output": "logit"}})
    assert (other.forward_passes, other.backward_passes) == (2 * len(TOY), 2 * len(TOY))
