"""The Heatmaps page run through ``app.py`` with AppTest, and the heatmap renderer on hand-made records.

The page tests use the bundled ``minilm-sst2`` model and the bundled examples; the first one
runs every fast method, the others run cheap ones (``random``, ``attention_mean``).
"""

from __future__ import annotations

import dataclasses
import html
import json
import re
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import explainers
from core.datasets import load_bundled_examples
from core.types import Attribution
from tests.page_text import as_read, errors, one_layout
from ui.heatmap import colour, heatmap_html

APP = Path(__file__).resolve().parents[1] / "app.py"
MODEL = "minilm-sst2"
FAST = list(explainers.DEFAULT_PANEL)  # the page's first rows
ROW_RE = re.compile(r'<tr class="hm-row" data-method="([^"]+)">(.*?)</tr>')
CELL_RE = re.compile(r'<td class="hm-cell"( colspan="(\d+)")? style="([^"]*)" title="([^"]*)">(.*?)</td>')


def run_app(state: dict[str, object] | None = None, **query: str) -> AppTest:
    """One run of the app with the given query parameters and widget values.

    Every input is set before the first run: after a rerun AppTest's element tree keeps only the
    page's elements of an ``st.navigation`` app (the sidebar's are dropped), so tests do not rerun.
    """
    at = AppTest.from_file(str(APP), default_timeout=600)
    at.query_params.update({"model": MODEL, **query})
    for key, value in (state or {}).items():
        at.session_state[key] = value
    return at.run()


def free_text(text: str, methods: str = "random") -> AppTest:
    return run_app({"sidebar.dataset": "free text", "sidebar.text": text}, methods=methods)


def heatmap(at: AppTest) -> str:
    return one_layout("".join(h.value for h in at.html if 'data-role="heatmap"' in h.value))


def rows(at: AppTest) -> dict[str, list[tuple[int, str, str, str]]]:
    """Cells of each method's row (its blocks joined): (colspan, style, title, text)."""
    cells: dict[str, list[tuple[int, str, str, str]]] = {}
    for method, body in ROW_RE.findall(heatmap(at)):
        cells.setdefault(method, []).extend(
            (int(span or 1), style, title, text) for _, span, style, title, text in CELL_RE.findall(body)
        )
    return cells


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


# --------------------------------------------------------------------------- the page


@pytest.mark.slow
def test_every_fast_method_renders_a_row_under_the_same_words() -> None:
    at = run_app(dataset="examples", split="sst2", index="0")
    assert_clean(at)
    example = load_bundled_examples(split="sst2")[0]
    cells = rows(at)
    assert list(cells) == FAST
    for method in FAST:
        assert [text for *_, text in cells[method]] == list(example.words), method
    # the human rationale (sharp, funny, warmth, alive) is outlined in every row, nothing else is
    outlined = {text for *_, style, _, text in cells["loo_empty"] if "outline" in style}
    assert outlined == {"sharp", "funny", "warmth", "alive"}
    costs = at.dataframe[0].value.set_index("method")
    assert list(costs.index) == FAST
    assert costs.loc["loo_empty", "forward passes"] == len(example.words) + 1  # original + one per word
    assert costs.loc["integrated_gradients", "backward passes"] == 50  # default n_steps
    assert costs.loc["random", "forward passes"] == 0
    assert at.query_params["methods"] == ",".join(FAST)


def test_sampling_methods_show_an_estimate_that_bounds_their_passes() -> None:
    small = {"heatmaps.param.lime.n_samples": 60, "heatmaps.param.kernel_shap.n_samples": 40}
    at = run_app(small, dataset="examples", split="sst2", index="0", methods="lime,kernel_shap")
    assert_clean(at)
    captions = " ".join(c.value for c in at.caption)
    for method, samples in (("lime", 60), ("kernel_shap", 40)):
        assert re.search(
            rf"Estimated time for \*\*{method}\*\*: about [0-9.]+ s \(at most {samples} classifier forward passes",
            captions,
        ), captions
    costs = at.dataframe[0].value.set_index("method")
    assert 0 < costs.loc["lime", "forward passes"] <= 60
    assert 0 < costs.loc["kernel_shap", "forward passes"] <= 40


def test_words_the_model_reads_as_unknown_are_named() -> None:
    """Chinese typed for an English model: each ideograph had a cell and a score of its own in the
    words view, though the model read nearly all of them as the same [UNK] token."""
    import services
    from core.datasets import split_words

    text = "The movie 电影 was great 好看"
    clf = services.classifier("minilm-sst2")
    unk = clf.special_tokens["unk"]
    expected = [w for w in split_words(text) if set(clf.word_tokens(w)) == {unk}]
    assert len(expected) >= 2  # the fixture's point: some ideographs are outside the vocabulary
    at = free_text(text)
    assert_clean(at)
    notes = [as_read(i.value) for i in at.info if "vocabulary" in i.value]
    said = (
        f"{len(expected)} of 8 words are not in minilm-sst2's vocabulary ({', '.join(expected)}): it reads each as "
        "[UNK], so their scores cannot tell them apart. The subwords view shows what it reads."
    )
    assert notes == [said]
    assert not [i for i in free_text("A fine film").info if "vocabulary" in i.value]
    # Scored under autocast the reference is "minilm-sst2 [autocast: bfloat16]": the note names the model.
    autocast = run_app({"sidebar.dataset": "free text", "sidebar.text": text, "sidebar.autocast": "bfloat16"})
    assert [as_read(i.value) for i in autocast.info if "vocabulary" in i.value] == [said]


def test_leave_one_out_on_a_long_text_shows_an_estimate_and_a_short_one_does_not() -> None:
    """Leave-one-out and IG on a long free text ran for minutes with no estimate (shown only for
    sampling methods and mask optimisers)."""
    at = free_text(" ".join(["good", "bad"] * 80), methods="loo_empty,saliency")  # 160 words, 162 tokens
    assert_clean(at)
    captions = " ".join(c.value for c in at.caption)
    assert re.search(
        r"Estimated time for \*\*loo_empty\*\*: about [0-9.]+ s \(at most 161 classifier forward", captions
    )
    assert "**saliency**" not in captions  # one pass and its backward: not worth a calibration
    short = run_app(dataset="examples", split="sst2", index="0", methods="loo_empty")
    assert "Estimated time" not in " ".join(c.value for c in short.caption)


def test_a_run_estimated_long_waits_for_a_click(monkeypatch) -> None:
    """Leave-one-out over a long free text (estimated 94 s in the browser walk) started at once
    with no way to change the methods first; past ``AUTO_RUN_S`` the page now waits for its Run
    button, and the click runs it."""
    monkeypatch.setattr("services.estimates.measured_rate", lambda model, example: 2.0)  # 161 passes: 80 s
    at = free_text(" ".join(["good", "bad"] * 80), methods="loo_empty")
    assert_clean(at)
    assert "loo_empty" not in rows(at)
    assert any("Press **Run the chosen methods (≈ 1 min 20 s)**" in i.value for i in at.info)
    at.button(key="heatmaps.run").click().run()
    assert_clean(at)
    assert len(rows(at)["loo_empty"]) == 160


def test_the_second_models_time_counts_toward_the_wait(monkeypatch) -> None:
    """Model B's methods were left out of the estimate, so a comparison of two long runs started at
    once: each model's methods are estimated now, and their sum decides the wait."""
    monkeypatch.setattr("services.estimates.measured_rate", lambda model, example: 13.0)  # 161 passes: 12.4 s
    text = " ".join(["good", "bad"] * 80)
    alone = free_text(text, methods="loo_empty")
    assert_clean(alone)
    assert len(rows(alone)["loo_empty"]) == 160  # 12.4 s: under the threshold
    both = run_app({"sidebar.dataset": "free text", "sidebar.text": text}, methods="loo_empty", compare="randomized")
    assert not both.exception and not rows(both)  # waits for its click
    captions = " ".join(c.value for c in both.caption)
    assert "Estimated time for **loo_empty**: about 12.4 s" in captions
    assert "Estimated time for **loo_empty** (model B): about 12.4 s" in captions
    assert any("Press **Run the chosen methods (≈ 25 s)**" in i.value for i in both.info), [i.value for i in both.info]


@pytest.mark.slow
def test_mask_optimisers_show_estimate_spans_preview_and_trace() -> None:
    small = {
        "heatmaps.param.marc.n_steps": 12,
        "heatmaps.param.aml.n_train": 8,
        "heatmaps.param.aml.n_steps": 2,
    }
    at = run_app(small, dataset="examples", split="sst2", index="0", methods="marc,aml")
    assert_clean(at)
    words = load_bundled_examples(split="sst2")[0].words
    cells = rows(at)
    assert list(cells) == ["marc", "aml"]
    for method in ("marc", "aml"):
        assert [text for *_, text in cells[method]] == list(words), method
    captions = " ".join(c.value for c in at.caption)
    assert re.search(r"Estimated time for \*\*marc\*\*: about [0-9.]+ s \(at most 12 optimisation steps", captions)
    assert re.search(r"Estimated time for \*\*aml\*\*: about [0-9.]+ s \(\+ about [0-9]+ s the first time", captions)
    charts = [c.key for c in at.get("plotly_chart")]
    # the probabilities, one optimisation trace per method, then the methods' agreement
    assert charts == ["heatmaps.probabilities", "heatmaps.trace.marc", "heatmaps.trace.aml", "heatmaps.agreement"]
    assert sum("Rationale spans" in m.value for m in at.markdown) == 2
    # per method: the spans, the greyed masked input, and the input as the classifier sees it
    panels = [h.value for h in at.html if h.value.startswith("<div style='line-height:2.1")]
    assert len(panels) == 6 and all(html.escape(w, quote=False) in panels[1] for w in words)
    assert "[MASK]" in panels[5]  # AML's masked words, as the classifier sees them


def test_query_parameters_pick_example_and_methods() -> None:
    at = run_app(dataset="examples", split="sst2", index="3", methods="random,attention_mean")
    assert_clean(at)
    assert at.sidebar.number_input(key="sidebar.index").value == 3
    cells = rows(at)
    assert list(cells) == ["random", "attention_mean"]
    assert [text for *_, text in cells["random"]] == list(load_bundled_examples(split="sst2")[3].words)
    # the hover text carries the raw score shown by the colour
    for _, _, title, text in cells["attention_mean"]:
        word, value = title.rsplit(": ", 1)
        assert word == text and float(value) >= 0  # attention received is never negative


def test_subword_view_splits_gradient_rows_and_spans_word_rows() -> None:
    at = run_app({"heatmaps.view": "subwords"}, dataset="examples", split="sst2", index="2", methods="saliency,random")
    assert_clean(at)
    from core.models import load_tokenizer  # the test may use the tokenizer; the page may not

    words = load_bundled_examples(split="sst2")[2].words
    pieces = load_tokenizer(MODEL)(list(words), is_split_into_words=True, add_special_tokens=False).tokens()
    cells = rows(at)
    assert [text for *_, text in cells["saliency"]] == [html.escape(p) for p in pieces]
    assert [text for *_, text in cells["random"]] == list(words)
    assert sum(span for span, *_ in cells["random"]) == len(pieces)


def test_html_in_the_text_is_shown_as_text() -> None:
    at = free_text('A <script>alert(1)</script> film with <b onmouseover="x()">bold</b> moments')
    assert_clean(at)
    body = heatmap(at)
    assert "<script" not in body and "<b " not in body and "</b>" not in body
    texts = [text for *_, text in rows(at)["random"]]
    assert texts[:4] == ["A", "&lt;", "script", "&gt;"]


def test_empty_text_shows_a_message() -> None:
    at = free_text("   ")
    assert not at.exception
    assert any("empty" in e.value for e in at.error)
    assert not rows(at)


def test_a_text_longer_than_the_model_takes_is_cut_with_a_warning() -> None:
    at = free_text(" ".join(["good"] * 600))  # one token per word; 512 positions hold [CLS], 510 words, [SEP]
    assert_clean(at)
    assert any("last 90 words were dropped" in w.value for w in at.warning)
    assert len(rows(at)["random"]) == 510


@pytest.mark.parametrize("model", ["no-such-model-anywhere", "/nonexistent/folder"])
def test_a_model_that_cannot_be_loaded_shows_an_error(model: str) -> None:
    at = run_app(model=model, methods="random")
    assert not at.exception
    assert any("cannot load" in e and model in e for e in errors(at))
    assert not rows(at)


def test_a_model_that_is_no_sequence_classifier_shows_an_error(tmp_path: Path) -> None:
    config = {"model_type": "bert", "architectures": ["BertForMaskedLM"], "vocab_size": 10}
    (tmp_path / "config.json").write_text(json.dumps(config))
    at = run_app(model=str(tmp_path), methods="random")
    assert not at.exception
    assert any("not a sequence classifier" in e.value for e in at.error)


def test_a_pair_model_given_one_text_asks_for_a_hypothesis() -> None:
    at = run_app(model="minilm-esnli", dataset="examples", split="sst2", index="0", methods="random")
    assert not at.exception
    assert any("premise and a hypothesis" in e.value for e in at.error)


# --------------------------------------------------------------------------- the renderer


def record(method: str, words: tuple[str, ...], scores: list[float]) -> Attribution:
    return Attribution(method=method, example_id="t", target=0, words=words, scores=np.array(scores))


def test_palette_ends_and_midpoint() -> None:
    assert colour(1.0) == "#b2182b" and colour(-1.0) == "#2166ac" and colour(0.0) == "#f7f7f7"
    # halfway from #f7f7f7 to #b2182b: (247+178)/2, (247+24)/2, (247+43)/2 rounded half to even
    assert colour(0.5) == "#d48891"
    assert colour(3.0) == colour(1.0) and colour(float("nan")) == colour(0.0)


def test_scale_per_row_or_shared() -> None:
    words = ("good", "bad")
    attributions = {"a": record("a", words, [2.0, -1.0]), "b": record("b", words, [0.5, 0.0])}

    def backgrounds(shared: bool) -> dict[str, list[str]]:
        found = ROW_RE.findall(heatmap_html(words, (0, 0), attributions, shared_scale=shared))
        return {m: re.findall(r"background:(#[0-9a-f]{6})", body) for m, body in found}

    assert backgrounds(False) == {"a": [colour(1), colour(-0.5)], "b": [colour(1), colour(0)]}
    assert backgrounds(True) == {"a": [colour(1), colour(-0.5)], "b": [colour(0.25), colour(0)]}


def test_tokens_and_hover_values_are_escaped() -> None:
    words = ('"><img src=x onerror=alert(1)>', "<script>alert(1)</script>", "fine")
    body = heatmap_html(words, (0, 0, 0), {"m": record("m", words, [0.25, -1.0, 0.0])}, rationale=(0, 1, 0))
    assert "<img" not in body and "<script" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert 'title="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;: +0.25"' in body
    cells = CELL_RE.findall(one_layout(body))
    assert ["outline" in style for _, _, style, _, _ in cells] == [False, True, False]


def test_pairs_are_drawn_as_premise_then_hypothesis() -> None:
    words = ("a", "dog", "runs", "an", "animal", "moves")
    body = heatmap_html(words, (0, 0, 0, 1, 1, 1), {"m": record("m", words, [0, 1, 0, 0, 1, 0])})
    assert body.index(">Premise<") < body.index(">dog<") < body.index(">Hypothesis<") < body.index(">animal<")
    assert one_layout(body).count('<table class="hm-block"') == 2


def test_downloads_and_the_agreement_matrix_of_the_example() -> None:
    """Two methods: the heatmap's HTML / PNG / LaTeX / JSON buttons, the agreement matrix (with
    its own image buttons) and the cost table's CSV / Parquet buttons."""
    at = run_app(methods="random,attention_mean")
    assert not at.exception and not at.error
    keys = {b.key for b in at.get("download_button")}
    assert {"heatmaps.download.heatmap.html", "heatmaps.download.heatmap.tex", "heatmaps.download.json"} <= keys
    assert {"heatmaps.costs.download.table.csv", "heatmaps.agreement.download.figure.png"} <= keys
    assert any(c.key == "heatmaps.agreement" for c in at.get("plotly_chart"))


def test_the_page_controls_survive_a_sidebar_error() -> None:
    """A model that cannot be loaded stops the page before its controls are drawn; once the model
    is fixed, the page's state and rows are as they were. AppTest keeps a widget's value across a
    run that does not draw it, so the loss a browser showed (an empty method picker) is guarded by
    ``tests/test_browser.py``; this checks the server side of the same sequence."""
    at = run_app(methods="random")
    at.multiselect(key="heatmaps.methods").select("attention_mean")
    at.toggle(key="heatmaps.shared_scale").set_value(True)
    at.run()  # the user's choices: widget values now, as a browser sends them
    assert at.session_state["heatmaps.methods"] == ["random", "attention_mean"]
    at.session_state["sidebar.model_path"] = "no-such-model-anywhere"
    at.run()
    assert any("cannot load" in e for e in errors(at))
    at.session_state["sidebar.model_path"] = ""
    at.run()
    assert not at.exception and not errors(at)
    assert at.session_state["heatmaps.methods"] == ["random", "attention_mean"]
    assert at.session_state["heatmaps.shared_scale"] is True
    assert set(rows(at)) == {"random", "attention_mean"}


def test_an_index_past_the_end_of_the_split_is_named_not_swapped_silently() -> None:
    last = len(load_bundled_examples(split="sst2")) - 1
    at = run_app(dataset="examples", split="sst2", index="999999", methods="random")
    assert not at.exception
    assert any(f"examples/sst2 has no example 999999 (0–{last}): showing {last}." in w.value for w in at.warning)
    assert rows(at)["random"][0][3] == load_bundled_examples(split="sst2")[last].words[0]


def test_unknown_methods_in_a_link_are_named_not_dropped_silently() -> None:
    at = run_app(methods="random,bogus,<b>x</b>")
    assert not at.exception
    assert at.session_state["heatmaps.methods"] == ["random"]
    assert any("left out of the link's choice: “bogus, \\<b\\>x\\</b\\>”" in w.value for w in at.warning)


def test_the_cost_table_notes_read_as_words() -> None:
    """The notes column showed internals with signs: "original_probability=+0.9855, mlm_forward_passes=+20"."""
    from ui.heatmap import cost_rows

    words = ("a", "film")
    row = record("im", words, [0.5, -0.5])
    row = dataclasses.replace(row, extras={"original_probability": 0.98551, "mlm_forward_passes": 20, "top": [1, 2]})
    [cost] = cost_rows({"im": row})
    assert cost["notes"] == "original probability 0.9855, mlm forward passes 20"
