"""Layer randomisation on the tiny toy BERT: components, re-initialisation, known answers, CLI."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from cli.main import main
from core.classifier import Classifier
from core.types import Example
from experiments import randomization as R
from tests.toy import toy_bert, toy_linear

TEXTS = (
    "the movie was great but the plot was bad .",
    "it is a very good film and the actors are fun",
    "the dog runs outside and the cat sleeps inside",
    "a boring plot , awful actors , not fun",
    "the man is not very good but it was fun",
    "it was unbelievable , the film is great",
    "the cat and the dog and the man",
    "bad plot but good actors and a great film .",
)
EXAMPLES = [Example(segments=(tuple(t.split()),), id=f"toy/{i}") for i, t in enumerate(TEXTS)]
STEP_NAMES = ["original", "head", "block 2", "block 1", "embeddings"]


def _snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


def test_components_of_a_bert_classifier_top_down() -> None:
    parts = R.model_components(toy_bert().model)
    assert [(p.name, p.modules) for p in parts] == [
        ("head", ("classifier", "bert.pooler")),
        ("block 2", ("bert.encoder.layer.1",)),
        ("block 1", ("bert.encoder.layer.0",)),
        ("embeddings", ("bert.embeddings",)),
    ]


def test_an_unknown_component_lists_the_known_ones_top_down() -> None:
    with pytest.raises(
        ValueError, match=r"unknown component\(s\) 'block 9'; known \(top down\): head, block 2, block 1, embeddings$"
    ):
        R.select_components(toy_bert().model, ["block 9"])


def test_an_architecture_without_blocks_is_refused() -> None:
    with pytest.raises(ValueError, match="ToyLinearClassifier"):
        R.model_components(toy_linear().model)


def test_plan_steps_cascade_or_stand_alone() -> None:
    model = toy_bert().model
    cascading = R.plan(model, "cascading")
    assert [s.name for s in cascading] == STEP_NAMES
    assert cascading[3].randomized == ("head", "block 2", "block 1")
    assert [s.randomized for s in R.plan(model, "independent")][1:] == [
        ("head",),
        ("block 2",),
        ("block 1",),
        ("embeddings",),
    ]
    assert [s.name for s in R.plan(model, "cascading", ["embeddings", "head"])] == ["original", "head", "embeddings"]
    with pytest.raises(ValueError, match="'block 9'"):
        R.plan(model, "cascading", ["block 9"])
    with pytest.raises(ValueError, match="mode"):
        R.plan(model, "shuffled")


def test_reinitialisation_uses_the_models_initializer_on_the_named_component_only() -> None:
    model = toy_bert(seed=3).model  # a private instance: marking its weights is harmless
    with torch.no_grad():
        model.bert.encoder.layer[1].output.LayerNorm.weight.fill_(2.0)
        model.classifier.bias.fill_(0.5)
    copied = R.randomized_copy(model, ["block 2"], seed=0)
    block = copied.bert.encoder.layer[1]
    assert torch.equal(block.output.LayerNorm.weight, torch.ones(16))  # LayerNorm back to its init
    assert torch.equal(block.attention.self.query.bias, torch.zeros(16))  # Linear bias zeroed
    std = float(block.intermediate.dense.weight.std())  # 32 x 16 draws of N(0, 0.02)
    assert 0.017 < std < 0.023
    assert not torch.equal(block.intermediate.dense.weight, model.bert.encoder.layer[1].intermediate.dense.weight)
    assert torch.equal(copied.classifier.bias, torch.full((2,), 0.5))  # the head is untouched
    assert torch.equal(
        copied.bert.encoder.layer[0].output.dense.weight, model.bert.encoder.layer[0].output.dense.weight
    )
    assert float(model.bert.encoder.layer[1].output.LayerNorm.weight[0]) == 2.0  # the source is untouched
    head = R.randomized_copy(model, ["head"], seed=0)
    assert torch.equal(head.classifier.bias, torch.zeros(2))
    embeddings = R.randomized_copy(model, ["embeddings"], seed=0).bert.embeddings
    assert torch.equal(embeddings.word_embeddings.weight[0], torch.zeros(16))  # the [PAD] row


def test_random_weights_repeat_with_the_seed() -> None:
    model = toy_bert().model
    first = R.randomized_copy(model, ["block 1", "embeddings"], seed=7).state_dict()
    again = R.randomized_copy(model, ["block 1", "embeddings"], seed=7).state_dict()
    other = R.randomized_copy(model, ["block 1", "embeddings"], seed=8).state_dict()
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert not torch.equal(
        first["bert.encoder.layer.0.output.dense.weight"], other["bert.encoder.layer.0.output.dense.weight"]
    )


def test_shuffling_permutes_each_tensor_of_the_named_component_only() -> None:
    model = toy_bert().model
    before = _snapshot(model)
    shuffled = R.randomized_copy(model, ["block 1"], seed=3, scheme="shuffle").state_dict()
    again = R.randomized_copy(model, ["block 1"], seed=3, scheme="shuffle").state_dict()
    assert all(torch.equal(before[k], model.state_dict()[k]) for k in before)  # the original is untouched
    changed = []
    for name, tensor in before.items():
        assert torch.equal(shuffled[name], again[name])
        if name.startswith("bert.encoder.layer.0.") and tensor.numel() > 1 and tensor.unique().numel() > 1:
            # the same values, in other places
            assert torch.equal(shuffled[name].flatten().sort().values, tensor.flatten().sort().values)
            changed.append(not torch.equal(shuffled[name], tensor))
        elif not name.startswith("bert.encoder.layer.0."):
            assert torch.equal(shuffled[name], tensor), name
    assert changed and all(changed)
    with pytest.raises(ValueError, match=re.escape("scheme 'gaussian' is not one of ('init', 'shuffle')")):
        R.randomized_copy(model, ["block 1"], seed=3, scheme="gaussian")


def test_pooled_correlation_is_spearman_over_the_concatenated_words() -> None:
    from scipy import stats

    from experiments.randomization.similarity import pooled_correlation

    original = [np.array([0.1, 0.5, -0.2, 0.9]), np.array([1.0, -1.0, 0.3])]
    randomized = [np.array([0.2, 0.4, -0.1, 0.3]), np.array([-0.5, 0.6, 0.0])]
    rho, low, high, n = pooled_correlation(original, randomized)
    expected = stats.spearmanr(np.concatenate(original), np.concatenate(randomized)).statistic
    assert rho == pytest.approx(expected) and n == 7 and -1 <= low < rho < high <= 1
    # Fisher's z: tanh(atanh(rho) -+ 1.96 / sqrt(n - 3))
    assert low == pytest.approx(np.tanh(np.arctanh(rho) - stats.norm.ppf(0.975) / 2.0))
    absolute = pooled_correlation(original, randomized, absolute=True)[0]
    expected_abs = stats.spearmanr(np.abs(np.concatenate(original)), np.abs(np.concatenate(randomized))).statistic
    assert absolute == pytest.approx(expected_abs)
    assert np.isnan(pooled_correlation([np.array([1.0, 2.0])], [np.array([2.0, 1.0])])[0])  # too few words


def test_a_run_reports_its_scheme_and_pooled_correlations(bert_clf: Classifier) -> None:
    result = R.run_randomization(
        bert_clf, EXAMPLES[:3], ["grad_x_input"], components=["head", "block 2"], scheme="shuffle", seed=1
    )
    payload = result.to_json()
    assert payload["scheme"] == "shuffle"
    head = payload["steps"][1]["methods"]["grad_x_input"]
    original = [row.attributions[0]["grad_x_input"].scores for row in result.examples]
    randomized = [row.attributions[1]["grad_x_input"].scores for row in result.examples]
    from experiments.randomization.similarity import pooled_correlation

    assert head["pooled"]["spearman"] == pytest.approx(pooled_correlation(original, randomized)[0])
    assert head["pooled"]["n_words"] == sum(len(row.example.words) for row in result.examples)
    assert result.summary(pooled=True)[0]["grad_x_input"]["spearman"][0] == pytest.approx(1.0)
    # a single example's pooled rho is its own rho
    one = R.run_randomization(bert_clf, EXAMPLES[:1], ["grad_x_input"], components=["head"], seed=1)
    assert one.summary(pooled=True)[1]["grad_x_input"]["spearman"][0] == pytest.approx(
        one.examples[0].similarities[1]["grad_x_input"].spearman
    )


def test_a_copy_without_randomisation_explains_exactly_like_the_original(bert_clf: Classifier) -> None:
    import explainers

    twin = R.step_classifier(bert_clf, R.randomized_copy(bert_clf.model, [], seed=0), "copy")
    for key in ("saliency", "grad_x_input", "attention_rollout"):
        spec = explainers.get(key)
        original = explainers.run_explainer(spec, bert_clf, EXAMPLES[0], 1)
        copied = explainers.run_explainer(spec, twin, EXAMPLES[0], 1)
        np.testing.assert_array_equal(original.scores, copied.scores)


def test_original_step_is_exactly_one_and_attention_ignores_the_head(bert_clf: Classifier) -> None:
    result = R.run_randomization(
        bert_clf, EXAMPLES[:3], ["grad_x_input", "attention_mean"], mode="independent", components=["head"]
    )
    assert [s.name for s in result.steps] == ["original", "head"]
    for row in result.examples:
        for method in result.methods:
            assert row.similarities[0][method] == R.Similarity(1.0, 1.0, 1.0, 0.0, 0.0)
        # Attention weights do not depend on the classifier head: identical after its reset.
        np.testing.assert_array_equal(
            row.attributions[1]["attention_mean"].scores, row.attributions[0]["attention_mean"].scores
        )
        # The gradient flows through the head: it changes.
        assert row.similarities[1]["grad_x_input"].mean_abs_change > 0
    summary = result.summary()
    assert summary[0]["grad_x_input"]["spearman"][:3] == (1.0, 1.0, 1.0)
    assert summary[1]["attention_mean"]["spearman"][0] == 1.0
    assert result.forward_passes == 3 + 2 * 2 * 3  # 3 predictions, then 2 methods x 2 steps x 3 examples
    assert result.backward_passes == 2 * 3


def test_gradient_correlation_vanishes_after_randomising_everything(bert_clf: Classifier) -> None:
    """Mean Spearman of grad_x_input between the original and the fully re-initialised model over
    8 sentences x 3 seeds. With two independent random models the per-example rho has a standard
    deviation of about 1 / sqrt(n_words - 1) ~ 0.35, so the mean of 24 has ~0.07: |mean| < 0.2."""
    values = []
    for seed in range(3):
        result = R.run_randomization(bert_clf, EXAMPLES, ["grad_x_input"], mode="cascading", seed=seed)
        assert result.steps[-1].randomized == ("head", "block 2", "block 1", "embeddings")
        values += [row.similarities[-1]["grad_x_input"].spearman for row in result.examples]
        assert result.summary()[0]["grad_x_input"]["spearman"][0] == 1.0
    assert len(values) == 24
    assert abs(float(np.mean(values))) < 0.2


def test_the_shared_model_is_byte_identical_after_runs(toy_bert_loaded) -> None:
    before = _snapshot(toy_bert_loaded.model)
    clf = Classifier(toy_bert_loaded)
    for mode in R.MODES:
        R.run_randomization(clf, EXAMPLES[:2], ["saliency", "attention_rollout"], mode=mode, seed=1)
    after = toy_bert_loaded.model.state_dict()
    assert before.keys() == after.keys()
    for name, tensor in before.items():
        assert tensor.dtype == after[name].dtype and torch.equal(tensor, after[name]), name
    assert not toy_bert_loaded.model.training
    assert not any(p.requires_grad for p in toy_bert_loaded.model.parameters())


def _scores(result: R.RandomizationResult) -> list:
    return [[{m: a.scores.tolist() for m, a in step.items()} for step in row.attributions] for row in result.examples]


def test_results_repeat_with_the_same_seed_and_modes_share_random_weights(bert_clf: Classifier) -> None:
    methods = ["saliency", "attention_mean"]
    first = R.run_randomization(bert_clf, EXAMPLES[:2], methods, mode="cascading", seed=5)
    again = R.run_randomization(bert_clf, EXAMPLES[:2], methods, mode="cascading", seed=5)
    other = R.run_randomization(bert_clf, EXAMPLES[:2], methods, mode="cascading", seed=6)
    assert _scores(first) == _scores(again)
    assert first.to_json()["steps"] == again.to_json()["steps"]
    assert _scores(first) != _scores(other)
    # The head (the first component) gets the same random weights in both modes.
    independent = R.run_randomization(bert_clf, EXAMPLES[:2], methods, mode="independent", seed=5, components=["head"])
    assert _scores(independent) == [row[:2] for row in _scores(first)]


def test_cli_prints_one_object_per_step_matching_a_direct_run(toy_bert_folder: str, capsys) -> None:
    text = "the movie was great but the plot was bad ."
    argv = ["randomize", "--model", toy_bert_folder, "--text", text, "--methods", "saliency,attention_mean"]
    assert main([*argv, "--mode", "independent", "--seed", "3", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in payload["steps"]] == STEP_NAMES
    assert payload["mode"] == "independent" and payload["n_examples"] == 1
    for step in payload["steps"]:
        assert set(step["methods"]) == {"saliency", "attention_mean"}
        for values in step["methods"].values():
            assert {"spearman", "spearman_abs", "topk_overlap", "sign_change", "mean_abs_change", "n"} <= set(values)
            assert "spearman_ci" not in values
    assert payload["steps"][0]["methods"]["saliency"]["spearman"] == 1.0
    assert payload["steps"][1]["methods"]["attention_mean"]["spearman"] == 1.0  # head reset
    assert payload["examples"][0]["words"] == text.split()
    # An independent re-run with the same seed gives the same correlations as the command line.
    clf = Classifier(toy_bert())
    direct = R.run_randomization(
        clf, [Example(segments=(tuple(text.split()),))], ["saliency", "attention_mean"], mode="independent", seed=3
    )
    assert [s["methods"] for s in direct.to_json()["steps"]] == [s["methods"] for s in payload["steps"]]


def test_cli_over_a_dataset_reports_intervals(toy_bert_folder: str, capsys) -> None:
    argv = [
        "randomize",
        "--model",
        toy_bert_folder,
        "--dataset",
        "examples",
        "--split",
        "sst2",
        "--limit",
        "3",
        "--methods",
        "grad_x_input",
        "--components",
        "head,embeddings",
        "--json",
    ]
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in payload["steps"]] == ["original", "head", "embeddings"]
    assert payload["n_examples"] == 3 and "examples" not in payload
    head = payload["steps"][1]["methods"]["grad_x_input"]
    low, high = head["spearman_ci"]
    assert low <= head["spearman"] <= high and head["n"] == 3
    assert head["pooled"]["n_words"] > 3
    assert main(["randomize", "--model", toy_bert_folder, "--text", "fun", "--components", "block 7"]) == 2
    capsys.readouterr()
    assert main([*argv[:-1], "--scheme", "shuffle", "--pooled"]) == 0
    table = capsys.readouterr().out
    assert "cascading randomisation (shuffle)" in table and "pooled over every word" in table


def _estimate_caption(app) -> str:
    """The page's one run-time estimate: a caption worded like the other pages' ("Estimated time:
    about ..."), not bold body text."""
    assert not [m.value for m in app.markdown if "Estimated" in m.value]
    (estimate,) = [c.value for c in app.caption if c.value.startswith("Estimated time: about ")]
    return estimate


@pytest.mark.slow  # AppTest imports the whole app: ~40 s on the loaded 2-core machine
def test_page_shows_curves_thumbnails_and_leaves_the_cached_model_alone(toy_bert_folder: str) -> None:
    from streamlit.testing.v1 import AppTest

    import services
    from core.loaded import load_classifier
    from ui.state import Selection

    words = ("the", "movie", "was", "<script>", "great", "but", "the", "plot", "was", "bad")
    example = Example(segments=(words,), id="page")
    app = AppTest.from_file("../app_pages/sanity_checks.py", default_timeout=180)
    app.session_state["selection"] = Selection(
        model=toy_bert_folder, label_names=("negative", "positive"), example=example
    )
    app.run()
    assert not app.exception
    estimate = _estimate_caption(app)
    assert re.fullmatch(r"Estimated time: about \d+ s on this machine \(5 method\(s\) take .+\)\.", estimate), estimate
    app.button(key="sanity.run").click().run()
    assert not app.exception
    assert app.get("plotly_chart")[0].key == "sanity.curves"
    rows = [h.proto.body for h in app.get("html") if 'class="sanity-row"' in h.proto.body]
    assert len(rows) == 5  # the thesis's five methods
    assert all(body.count('class="sanity-thumb"') == len(STEP_NAMES) for body in rows)
    assert "&lt;script&gt;" in rows[0] and "<script>" not in rows[0]
    head = app.dataframe[0].value.set_index("method")  # the head-reset table
    assert head.loc["attention_mean", "Spearman ρ"] == 1.0  # attention ignores the head
    assert head.loc["attention_rollout", "words changing sign (%)"] == 0.0
    downloads = {b.key for b in app.download_button}
    assert {"sanity.curves.download.figure.png", "sanity.head_table.download.table.csv"} <= downloads
    cached = services.models._loaded_classifier(toy_bert_folder).model.state_dict()
    fresh = load_classifier(toy_bert_folder, device="cpu").model.state_dict()
    assert all(torch.equal(cached[name], fresh[name]) for name in fresh)


@pytest.mark.slow  # AppTest imports the whole app
def test_page_runs_over_the_first_examples_of_a_dataset_slice(toy_bert_folder: str) -> None:
    from streamlit.testing.v1 import AppTest

    from core.datasets import load_bundled_examples
    from ui.state import Selection

    first = load_bundled_examples(split="sst2")[0]
    app = AppTest.from_file("../app_pages/sanity_checks.py", default_timeout=180)
    app.session_state["selection"] = Selection(
        model=toy_bert_folder, label_names=("negative", "positive"), dataset="examples", split="sst2", index=0,
        example=first,
    )  # fmt: skip
    app.run()
    app.multiselect(key="sanity.methods").set_value(["grad_x_input"]).run()
    app.radio(key="sanity.scope").set_value("dataset slice").run()
    app.number_input(key="sanity.n_examples").set_value(3).run()
    app.multiselect(key=f"sanity.components.{toy_bert_folder}").set_value(["block 1", "block 2"]).run()  # run top down
    app.segmented_control(key="sanity.scheme").set_value("shuffle").run()
    assert "× 3 steps: original, block 2, block 1; × 3 example(s)" in _estimate_caption(app)
    app.button(key="sanity.run").click().run()
    assert not app.exception and not app.error
    assert any(c.value.startswith("3 example(s), 3 steps") for c in app.caption)
    assert app.query_params.get("scheme") in ("shuffle", ["shuffle"])
    app.toggle(key="sanity.pooled").set_value(True).run()
    words = sum(len(e.words) for e in load_bundled_examples(split="sst2")[:3])
    assert any(c.value.startswith(f"Spearman's ρ over all {words} words pooled") for c in app.caption)


@pytest.mark.slow  # AppTest imports the whole app
def test_a_one_word_text_says_why_its_correlations_are_missing(toy_bert_folder: str) -> None:
    """A one-word text drew an empty chart and a column of "None" with nothing saying why."""
    from streamlit.testing.v1 import AppTest

    from ui.state import Selection

    app = AppTest.from_file("../app_pages/sanity_checks.py", default_timeout=180)
    app.session_state["selection"] = Selection(
        model=toy_bert_folder, label_names=("negative", "positive"), example=Example(segments=(("great",),), id="one")
    )
    app.run()
    app.multiselect(key="sanity.methods").set_value(["grad_x_input", "attention_mean"]).run()
    app.button(key="sanity.run").click().run()
    assert not app.exception and not app.error
    assert any("Rank correlations need at least two words" in i.value for i in app.info)
    head = app.dataframe[0].value.set_index("method")
    assert head["Spearman ρ"].dtype.kind == "f" and head["Spearman ρ"].isna().all()


def test_a_seeds_random_weights_do_not_depend_on_another_thread_seeding_the_global_generator() -> None:
    """``reinitialize`` seeded torch's global generator without the lock the other seeded blocks
    (KernelSHAP's, Captum's) take: beside a thread that reseeds it, the weights of seed 123 came out
    different in about 8 runs of 20."""
    import copy
    import threading

    from core.global_rng import seeded_globals
    from experiments.randomization.components import model_components, reinitialize

    base = toy_bert().model
    block = next(c for c in model_components(base) if c.name.startswith("block"))

    def weights() -> list[torch.Tensor]:
        model = copy.deepcopy(base)
        reinitialize(model, block, seed=123)
        return [p.detach().clone() for p in model.parameters()]

    reference = weights()
    stop = threading.Event()

    def reseeding() -> None:  # what a KernelSHAP request in another session does
        while not stop.is_set():
            with seeded_globals(7):
                torch.randn(1000)

    other = threading.Thread(target=reseeding)
    other.start()
    try:
        runs = [weights() for _ in range(20)]
    finally:
        stop.set()
        other.join()
    assert all(all(torch.equal(a, b) for a, b in zip(run, reference, strict=True)) for run in runs)


def test_a_top_k_fraction_out_of_range_is_refused_before_any_step(linear_clf, toy_example) -> None:
    """``--top-k 5`` (meant as five words) was refused only after every step had been explained."""
    reports = []
    with pytest.raises(ValueError, match=r"the top-k fraction must be in \(0, 1\], got 5"):
        R.run_randomization(linear_clf, [toy_example], ["saliency"], top_k_fraction=5,
                            progress=lambda fraction, message: reports.append(fraction))  # fmt: skip
    assert reports == []
