"""Two models side by side (issue 18 item 2): label matching, the per-method rank correlation,
the randomized copy, the Python API on the bundled model and the heatmap page through AppTest."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

import api
from core.datasets import load_bundled_examples
from core.types import Attribution
from engine.compare import compare_attributions, label_map
from experiments.randomization import randomized_model
from tests.page_text import errors, one_layout
from ui.heatmap import side_by_side

APP = Path(__file__).resolve().parents[1] / "app.py"
ROW_RE = re.compile(r'<tr class="hm-row" data-method="([^"]+)">(.*?)</tr>')
CELL_TEXT_RE = re.compile(r'<td class="hm-cell"[^>]*>(.*?)</td>')


def record(method: str, words: tuple[str, ...], scores: list[float]) -> Attribution:
    return Attribution(method=method, example_id="t", target=0, words=words, scores=np.array(scores))


# --------------------------------------------------------------------------- engine


def test_labels_match_by_name_else_by_position() -> None:
    assert label_map(("negative", "positive"), ("Positive", "NEGATIVE")) == (1, 0)
    assert label_map(("neg", "pos"), ("LABEL_0", "LABEL_1")) == (0, 1)
    with pytest.raises(ValueError, match="share some class names but not all"):  # entailment was read as contradiction
        label_map(("entailment", "neutral", "contradiction"), ("contradiction", "entailment", "unknown"))
    with pytest.raises(ValueError, match="different label sets"):
        label_map(("negative", "positive"), ("entailment", "neutral", "contradiction"))


def test_a_pair_cut_differently_is_compared_on_the_words_both_rows_share() -> None:
    """A pair is cut in its longer segment: model A kept p0..p3 and the hypothesis, model B the
    premise's first seven words. Their first n scores are not the same words: only the first
    four are compared and drawn."""
    from ui.heatmap import side_by_side

    premise, hypothesis = [f"p{i}" for i in range(8)], ["h0", "h1", "h2"]
    words_a, words_b = (*premise[:4], *hypothesis), tuple(premise[:7])
    a = Attribution("loo_empty", "x", 0, words_a, np.arange(7, dtype=np.float32))
    b = Attribution("loo_empty", "x", 0, words_b, np.arange(7, dtype=np.float32)[::-1].copy())
    assert compare_attributions({"loo_empty": a}, {"loo_empty": b})["loo_empty"].n_words == 4
    n_words, rows = side_by_side({"loo_empty": a}, {"loo_empty": b})
    assert n_words == 4 and {row.words for row in rows.values()} == {tuple(premise[:4])}


def test_a_second_model_with_other_classes_is_refused_before_its_weights_load(toy_bert_folder, monkeypatch) -> None:
    """The second model was loaded in full (about 37 s for a hub-size one) before its label set
    was refused: the label names now come from its task.json or config.json."""
    import importlib
    from types import SimpleNamespace

    from core import models as core_models
    from services import models

    compare = importlib.import_module("services.compare")  # the module (``services.compare`` is also a function)

    monkeypatch.setattr(core_models, "load_sequence_classifier", lambda *_: pytest.fail("the weights were loaded"))
    monkeypatch.setattr(compare, "explain", lambda *_, **__: pytest.fail("the second model was explained"))
    first = SimpleNamespace(prediction=SimpleNamespace(label_names=("negative", "positive")), target=0)
    with pytest.raises(ValueError, match=r"different label sets \(negative, positive vs entailment, neutral, cont"):
        compare.compare(first, "minilm-esnli", load_bundled_examples(split="sst2")[0], ["random"])  # type: ignore[arg-type]
    assert models.label_names(toy_bert_folder) == ("negative", "positive")  # a saved folder: config.json's id2label
    assert models.label_names("randomized:minilm-sst2") == ("negative", "positive")


def test_rank_correlation_per_method_known_answers() -> None:
    words = ("a", "b", "c", "d")
    first = {"m": record("m", words, [0.1, 0.4, -0.2, 0.3]), "only_a": record("only_a", words, [1, 2, 3, 4])}
    second = {"m": record("m", words, [1.0, 4.0, -2.0, 3.0])}  # same order: rho 1
    agreements = compare_attributions(first, second)
    assert list(agreements) == ["m"]
    assert agreements["m"].spearman == 1.0 and agreements["m"].n_words == 4
    reversed_ = {"m": record("m", words, [-0.1, -0.4, 0.2, -0.3])}
    found = compare_attributions(first, reversed_)["m"]
    assert found.spearman == -1.0 and found.spearman_abs == 1.0  # same magnitudes, opposite signs
    # a model that cut the text is compared on the words both kept
    short = {"m": record("m", words[:3], [3.0, 1.0, 2.0])}
    cut = compare_attributions(first, short)["m"]
    assert cut.n_words == 3 and cut.spearman == pytest.approx(-0.5)  # ranks (2,3,1) vs (3,1,2)


def test_side_by_side_rows_are_interleaved_and_cut() -> None:
    words = ("a", "b", "c")
    first = {"x": record("x", words, [1, 2, 3]), "y": record("y", words, [3, 2, 1])}
    second = {"x": record("x", words[:2], [1, 2])}
    n_words, rows = side_by_side(first, second)
    assert n_words == 2
    assert list(rows) == ["x · A", "x · B", "y · A"]
    assert all(len(a.scores) == 2 for a in rows.values())
    assert list(rows["y · A"].scores) == [3, 2]


def test_randomized_copy_changes_every_component_and_leaves_the_model(toy_bert_loaded, bert_clf) -> None:
    before = {name: p.detach().clone() for name, p in toy_bert_loaded.model.named_parameters()}
    copy = randomized_model(toy_bert_loaded, seed=0)
    assert copy.model is not toy_bert_loaded.model and copy.tokenizer is toy_bert_loaded.tokenizer
    assert "randomized" in copy.name
    for name, p in toy_bert_loaded.model.named_parameters():  # the shared model is untouched
        assert torch.equal(p, before[name]), name
    changed = {
        name.split(".")[1] if name.startswith("bert.") else name.split(".")[0]
        for name, p in copy.model.named_parameters()
        if not torch.equal(p, before[name])
    }
    assert {"classifier", "encoder", "embeddings"} <= changed
    assert not any(p.requires_grad for p in copy.model.parameters())
    again = randomized_model(toy_bert_loaded, seed=0)  # a seed gives the same weights
    for (name, p), q in zip(copy.model.named_parameters(), again.model.parameters(), strict=True):
        assert torch.equal(p, q), name


# --------------------------------------------------------------------------- the Python API


@pytest.mark.slow
def test_api_compare_with_the_randomized_copy() -> None:
    example = load_bundled_examples(split="sst2")[0]
    result = api.compare("minilm-sst2", "randomized", example, ["loo_empty", "random"], seed=3)
    assert result.first.words == result.second.words == example.words
    alone = api.explain("minilm-sst2", example, ["loo_empty"])
    np.testing.assert_array_equal(result.first["loo_empty"].scores, alone["loo_empty"].scores)
    assert result.second.target == result.first.target  # same label set: the same class explained
    frame = result.to_pandas()
    # the seeded random baseline ignores the model: identical rows, rho exactly 1
    assert frame.loc["random", "spearman"] == 1.0
    # leave-one-out of a destroyed model has little to do with the trained one's
    assert abs(frame.loc["loo_empty", "spearman"]) < 0.6
    body = result.html()
    found = list(dict.fromkeys(m for m, _ in ROW_RE.findall(body)))  # long texts wrap: rows repeat per block
    assert found == ["loo_empty · A", "loo_empty · B", "random · A", "random · B"]
    rho = frame.loc["loo_empty", "spearman"]
    assert repr(result) == (
        f"<ComparisonResult A='minilm-sst2', B={result.second.model!r}: Spearman's rho loo_empty {rho:.2f}, random 1.00>"
    )


# --------------------------------------------------------------------------- the heatmap page


@pytest.mark.slow
def test_heatmap_page_shows_both_models_rows_and_their_correlation() -> None:
    at = AppTest.from_file(str(APP), default_timeout=600)
    at.query_params.update(
        {"model": "minilm-sst2", "dataset": "examples", "split": "sst2", "index": "1", "methods": "random,saliency"}
    )
    at.run()
    assert not at.exception and not at.error
    assert not any(h.value for h in at.html if "· B" in h.value)  # off until asked for
    at.button(key="heatmaps.compare.randomized").click().run()  # the one-click randomized copy
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.query_params["compare"] == "randomized"
    words = list(load_bundled_examples(split="sst2")[1].words)
    body = one_layout(next(h.value for h in at.html if "saliency · B" in h.value))
    rows: dict[str, list[str]] = {}
    for method, cells in ROW_RE.findall(body):  # long texts wrap into blocks, one row per method in each
        rows.setdefault(method, []).extend(CELL_TEXT_RE.findall(cells))
    assert list(rows) == ["random · A", "random · B", "saliency · A", "saliency · B"]
    assert all(texts == words for texts in rows.values())
    heads = " ".join(m.value for m in at.markdown)
    # the names are escaped as plain text (a backtick in a typed name no longer breaks out of a code span)
    assert "**A** = minilm\\-sst2  " in heads
    assert "**B** = minilm\\-sst2 randomized \\(every layer, seed 0\\)  " in heads
    table = next(d.value for d in at.dataframe if "Spearman ρ" in d.value.columns).set_index("method")
    assert table.loc["random", "Spearman ρ"] == 1.0 and table.loc["random", "words"] == len(words)
    assert table.loc["saliency", "Spearman ρ"] < 0.9


def test_a_second_model_with_other_classes_is_refused_under_its_picker() -> None:
    """The refusal came last on the page, under the cost table, after the second model's label set
    was read; now it comes under the picker, before the first model's results."""
    at = AppTest.from_file(str(APP), default_timeout=600)
    at.query_params.update({"model": "minilm-sst2", "methods": "random", "compare": "minilm-esnli"})
    at.run()
    assert not at.exception
    message = (
        "The two models have different label sets (negative, positive vs entailment, neutral, contradiction): "
        "pick a second model with the same classes"
    )  # under the picker, from the second model's task.json
    assert errors(at) == [message]
    assert any("runtime (s)" in d.value.columns for d in at.dataframe)  # the first model's page is whole
    nodes = list(at.main)  # in page order
    error_at = next(i for i, node in enumerate(nodes) if node.type == "error")
    heatmap_at = next(i for i, node in enumerate(nodes) if node.type == "html" and 'data-role="heatmap"' in node.value)
    assert error_at < heatmap_at


@pytest.mark.slow
def test_a_long_text_in_windows_is_compared_whole() -> None:
    """Model A explained a long text whole in sliding windows, model B only its first 510 words:
    both rows are now of every word (they were cut to the words B read, with a warning)."""
    at = AppTest.from_file(str(APP), default_timeout=600)
    at.query_params.update({"model": "minilm-sst2", "methods": "random", "compare": "randomized"})
    for key, value in {"sidebar.dataset": "free text", "sidebar.text": " ".join(["good"] * 600)}.items():
        at.session_state[key] = value
    at.session_state["runs.windows"] = True
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert not any("cut the text differently" in w.value for w in at.warning)
    body = one_layout(next(h.value for h in at.html if "random · B" in h.value))
    rows: dict[str, list[str]] = {}
    for method, cells in ROW_RE.findall(body):
        rows.setdefault(method, []).extend(CELL_TEXT_RE.findall(cells))
    assert {method: len(texts) for method, texts in rows.items()} == {"random · A": 600, "random · B": 600}
