"""The reader's own highlight on the human-rationales page (AppTest, the bundled SST-2 model): a
typed text has no human rationale, so the words the reader marks are what each method is scored
against; beside an annotator's highlight, the reader's is scored against theirs; a link carries
the marks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[1] / "app.py"
TEXT = "the acting is superb but the plot is a dull , slow mess"
METHODS = ["loo_empty", "random"]


def open_page(params: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.switch_page("app_pages/rationales.py")
    at.query_params.update({"model": "minilm-sst2", "dataset": "free text", "text": TEXT, **(params or {})})
    at.session_state["rationales.methods"] = METHODS
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def loo_top(count: int) -> list[int]:
    """The words leave-one-out ranks highest for the predicted class, computed apart from the app."""
    import api

    scores = api.explain("minilm-sst2", TEXT, methods=["loo_empty"]).attributions["loo_empty"].scores
    return sorted(int(i) for i in np.argsort(-np.asarray(scores), kind="stable")[:count])


def test_marked_words_become_the_rationale_each_method_is_scored_against():
    at = open_page()
    [picker] = at.pills
    assert picker.options == TEXT.split() and not at.dataframe
    assert any("mark the words you would point to" in i.value for i in at.info)
    top = loo_top(3)
    picker.set_value(top).run()
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    f1 = next(c for c in table.columns if c.startswith("token F1"))
    # token F1 selects each map's top k words, k as many as marked: leave-one-out's are the marks
    assert table.loc["loo_empty", f1] == pytest.approx(1.0)
    assert 0.0 <= table.loc["random", f1] <= 1.0 and "coverage ≈ your highlight" in table.columns
    heatmap = next(h.proto.body for h in at.get("html") if 'data-role="heatmap"' in h.proto.body)
    assert 'data-method="your highlight"' in heatmap and 'data-method="human · majority"' not in heatmap
    assert at.query_params["highlight"] == ",".join(map(str, top))
    other = [i for i in range(len(TEXT.split())) if i not in top][:3]
    picker.set_value(other).run()  # none of leave-one-out's top three
    assert at.dataframe[0].value.loc["loo_empty", f1] == pytest.approx(0.0)


def test_a_link_presets_the_marks_and_a_bad_one_is_named():
    at = open_page({"highlight": "0,3"})
    assert at.pills[0].value == [0, 3] and at.dataframe
    bad = open_page({"highlight": "0,99"})
    assert bad.pills[0].value == [] and not bad.dataframe
    assert any("highlight “0,99”, which is not a list of word positions 0 to 12" in w.value for w in bad.warning)


def test_words_with_markup_are_shown_as_text_on_the_pills():
    """A pill's label is markdown: a typed word that is a link, markup or a Streamlit colour code
    must show as the characters typed."""
    import re

    at = AppTest.from_file(str(APP), default_timeout=300)
    at.switch_page("app_pages/rationales.py")
    hostile = "a :red[great] <b>film</b> [x](http://e.com) **bold**"
    at.query_params.update({"model": "minilm-sst2", "dataset": "free text", "text": hostile})
    at.session_state["rationales.methods"] = METHODS
    at.run()
    assert not at.exception
    labels = at.pills[0].options
    assert len(labels) == len(at.session_state["selection"].example.words) > 5
    assert not any(re.search(r"(?<!\\)[\[<*]", label) for label in labels), labels


def test_the_plausibility_tour_ends_on_the_picker():
    """The tour's last step types a review, which no one highlighted: the word buttons show."""
    from ui.tour_steps import TOURS

    step = next(t for t in TOURS if t.key == "plausibility").steps[-1]
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.switch_page(step.page)
    at.query_params.update({"model": step.model, "dataset": "free text", "text": step.typed})
    at.session_state["rationales.methods"] = METHODS
    at.run()
    assert not at.exception and not at.error
    assert at.pills and at.pills[0].options and not at.session_state["selection"].example.has_rationale


def test_beside_the_annotators_the_readers_highlight_is_scored_against_theirs():
    """A bundled SST-2 example with one annotator's highlight: marking exactly their words agrees
    fully (token F1 1), marking the other words not at all; the switch and the marks go in the
    link, and off, neither is shown."""
    from core.datasets import load_examples

    example = load_examples("examples", "sst2")[0]
    human = [i for i, m in enumerate(example.rationale) if m]
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.switch_page("app_pages/rationales.py")
    at.query_params.update({"model": "minilm-sst2", "dataset": "examples", "split": "sst2", "index": "0"})
    at.session_state["rationales.methods"] = METHODS
    at.run()
    assert not at.exception and not at.pills and "you (vs each annotator)" not in at.dataframe[0].value.index
    at.toggle(key="rationales.compare").set_value(True).run()
    [picker] = at.pills
    picker.set_value(human).run()
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    f1 = next(c for c in table.columns if c.startswith("token F1"))
    assert table.loc["you (vs each annotator)", f1] == pytest.approx(1.0)
    heatmap = next(h.proto.body for h in at.get("html") if 'data-role="heatmap"' in h.proto.body)
    assert 'data-method="your highlight"' in heatmap and 'data-method="human · majority"' in heatmap
    assert at.query_params["compare"] == "1" and at.query_params["highlight"] == ",".join(map(str, human))
    others = [i for i in range(len(example.words)) if i not in human]
    picker.set_value(others).run()
    assert at.dataframe[0].value.loc["you (vs each annotator)", f1] == pytest.approx(0.0)
    at.toggle(key="rationales.compare").set_value(False).run()
    assert not at.pills and "compare" not in at.query_params and "highlight" not in at.query_params
    linked = AppTest.from_file(str(APP), default_timeout=300)
    linked.switch_page("app_pages/rationales.py")
    linked.query_params.update(
        {"model": "minilm-sst2", "dataset": "examples", "split": "sst2", "index": "0", "compare": "1",
         "highlight": ",".join(map(str, human))}
    )  # fmt: skip
    linked.session_state["rationales.methods"] = METHODS
    linked.run()
    assert linked.pills[0].value == human
    assert linked.dataframe[0].value.loc["you (vs each annotator)", f1] == pytest.approx(1.0)


def test_the_marks_survive_a_visit_to_another_page():
    """The pills are drawn only on this page: Streamlit dropped their state on a page switch, so
    the marks (and the link's ``highlight``) were lost on the way back."""
    at = open_page()
    at.pills[0].set_value([1, 3]).run()
    at.switch_page("app_pages/heatmaps.py").run()
    at.switch_page("app_pages/rationales.py").run()
    assert not at.exception and not at.error
    assert at.pills[0].value == [1, 3] and at.query_params["highlight"] == "1,3"
