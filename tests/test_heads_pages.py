"""Every page with a multi-label and a regression model (issue 24), through AppTest: tiny random
BERTs of each head type saved as local folders and typed into the sidebar's model path."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.page_text import errors
from tests.toy import toy_bert_head
from ui.sidebar import DEFAULT_TARGET
from ui.text import plain

APP = Path(__file__).resolve().parents[1] / "app.py"
TEXT = "the movie was great but the plot was bad ."
HEADS = ["multi_label", "regression"]


@pytest.fixture(scope="module")
def head_dirs(tmp_path_factory) -> dict[str, str]:
    folders = {}
    for head in HEADS:
        folder = tmp_path_factory.mktemp(f"page-{head}")
        loaded = toy_bert_head(head)
        loaded.model.save_pretrained(folder)
        loaded.tokenizer.save_pretrained(folder)
        folders[head] = str(folder)
    return folders


def open_app(model: str, methods: list[str]) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.session_state["sidebar.model_path"] = model
    at.session_state["sidebar.dataset"] = "free text"
    at.session_state["sidebar.text"] = TEXT
    at.session_state["heatmaps.methods"] = methods
    return at.run()


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.mark.slow  # AppTest imports the whole app
@pytest.mark.parametrize("head", HEADS)
def test_heatmap_page_shows_the_heads_prediction_and_picker(head: str, head_dirs) -> None:
    at = open_app(head_dirs[head], ["loo_empty", "saliency"])
    assert_clean(at)
    summary = next(m.value for m in at.markdown if "**Explaining:**" in m.value)
    targets = [s for s in at.selectbox if s.key == "sidebar.target"]
    if head == "regression":
        assert summary.startswith("**Score:** sentiment score = ")
        assert not targets  # one score: nothing to pick
    else:
        assert summary.startswith("**Predicted labels** (probability ≥ 50%)")
        assert targets[0].options == ["most probable label", "toxic", "insult", "threat"]
        assert at.slider(key="sidebar.threshold").value == 0.5
    heatmap = "".join(h.value for h in at.html if 'data-role="heatmap"' in h.value)
    assert 'data-method="loo_empty"' in heatmap and 'data-method="saliency"' in heatmap


@pytest.mark.slow
def test_multi_label_threshold_and_target_change_what_is_shown(head_dirs) -> None:
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.session_state["sidebar.model_path"] = head_dirs["multi_label"]
    at.session_state["sidebar.dataset"] = "free text"
    at.session_state["sidebar.text"] = TEXT
    at.session_state["heatmaps.methods"] = ["loo_empty"]
    at.session_state["sidebar.threshold"] = 0.05
    at.session_state["sidebar.target"] = 2
    at.run()
    assert_clean(at)
    summary = next(m.value for m in at.markdown if "**Explaining:**" in m.value)
    shown = summary.split("  \n")[0]
    assert all(name in shown for name in ("toxic", "insult", "threat"))  # every sigmoid is near 0.5 > 0.05
    assert "**Explaining:** threat" in summary


@pytest.mark.slow
def test_head_override_in_the_sidebar(head_dirs) -> None:
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.session_state["sidebar.model_path"] = head_dirs["regression"]
    at.session_state["sidebar.dataset"] = "free text"
    at.session_state["sidebar.text"] = TEXT
    at.session_state["heatmaps.methods"] = ["loo_empty"]
    at.session_state["sidebar.head_type"] = "multi_label"
    at.run()
    assert_clean(at)
    summary = next(m.value for m in at.markdown if "**Explaining:**" in m.value)
    assert summary.startswith("**Predicted labels**")  # the one output read as a sigmoid


@pytest.mark.parametrize(
    ("shown", "head", "explained"),
    [("predicted class", "multi_label", None), ("insult", "multi_label", "insult"), ("toxic", "regression", None)],
)
def test_the_target_box_text_read_back_after_a_model_switch_is_no_link_request(shown, head, explained, head_dirs):
    """Right after the model changes, the target box's state reads back as the text it showed for
    the last model ("predicted class", a label name), not a class index. That text was taken for a
    link's request and warned about ("The model has no label most probable label (0–6)"): it now
    keeps a label the new model has, else the default, and warns of nothing."""
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.session_state["sidebar.model_path"] = head_dirs[head]
    at.session_state["sidebar.dataset"] = "free text"
    at.session_state["sidebar.text"] = TEXT
    at.session_state["heatmaps.methods"] = ["loo_empty"]
    at.session_state["sidebar.target"] = shown
    at.run()
    assert_clean(at)
    assert not at.warning, [w.value for w in at.warning]
    summary = next(m.value for m in at.markdown if "**Explaining:**" in m.value)
    if explained:
        assert f"**Explaining:** {explained}" in summary
    if head == "multi_label":
        assert at.selectbox(key="sidebar.target").value == (DEFAULT_TARGET if explained is None else 1)


PAGES = {
    "app_pages/faithfulness.py": None,
    "app_pages/rationales.py": None,
    "app_pages/input_marginalization.py": None,
    "app_pages/sanity_checks.py": "sanity.run",
    "app_pages/adversarial.py": "adversarial.run",
    "app_pages/explorer.py": None,
}


@pytest.mark.slow
@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_runs_with_each_head(page: str, head: str, head_dirs) -> None:
    at = open_app(head_dirs[head], [])
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    if page == "app_pages/faithfulness.py":
        at.multiselect(key="faithfulness.methods").set_value(["loo_empty"]).run()
        if head == "regression":
            assert any("Log-odds are not defined for a regression head" in c.value for c in at.caption)
    if page == "app_pages/sanity_checks.py":
        at.multiselect(key="sanity.methods").set_value(["grad_x_input"]).run()
    for button in at.button:  # runs estimated as long wait for a click
        if button.key and (button.key == PAGES[page] or button.key.startswith("im.run.")):
            button.click().run()
    assert_clean(at)
    if page == "app_pages/adversarial.py":  # a regression head's output is a score f, not a probability p
        columns = set(next(d.value for d in at.dataframe if "Spearman ρ" in d.value.columns).columns)
        symbol, change = ("f", "Score Change") if head == "regression" else ("p", "Probability Change")
        assert {f"{symbol} before", f"{symbol} after", change} <= columns, columns
    if page == "app_pages/input_marginalization.py":  # a score f, and no predicted class, for a regression head
        outputs = ["f(sentiment score)"] if head == "regression" else ["P(toxic)", "P(insult)", "P(threat)"]
        output = next(o for o in outputs if any(m.label == plain(f"{o} of the input") for m in at.metric))
        tables = [t.value for t in at.dataframe if {"counterfactual", "fill-in"} & set(t.value.columns)]
        assert len(tables) >= 3  # the fill-ins, the leave-one-out and the IM galleries
        for table in tables:
            assert output in table.columns and ("predicted" in table.columns) == (head != "regression")
    if page in ("app_pages/input_marginalization.py", "app_pages/faithfulness.py"):  # as the head defines it
        summary = next(m.value for m in at.markdown if "**Explaining:**" in m.value)
        assert summary.startswith("**Score:**" if head == "regression" else "**Predicted labels**"), summary


@pytest.mark.slow
def test_faithfulness_slice_and_removal_views_with_a_regression_head(head_dirs) -> None:
    """Both dataset views leave out log-odds, which a regression head does not have (they raised
    KeyError on it)."""
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.session_state["sidebar.model_path"] = head_dirs["regression"]
    at.session_state["sidebar.dataset"] = "examples"
    at.session_state["sidebar.split"] = "sst2"
    at.switch_page("app_pages/faithfulness.py").run()
    at.multiselect(key="faithfulness.methods").set_value(["loo_empty", "random"]).run()
    assert_clean(at)
    scores = at.dataframe[0].value
    assert "deletion AUC ↓" in scores.columns and not any("odds" in c for c in scores.columns), list(scores.columns)

    at.segmented_control(key="faithfulness.view").set_value("Dataset slice").run()
    at.number_input(key="faithfulness.slice_n").set_value(2).run()
    at.button(key="faithfulness.slice_run").click().run()
    assert_clean(at)
    summary = at.dataframe[0].value
    assert list(summary["n"]) == [2, 2] and not any("odds" in c for c in summary.columns), list(summary.columns)

    at.segmented_control(key="faithfulness.view").set_value("Removal modes compared").run()
    options = at.selectbox(key="faithfulness.compare_metric").options
    assert len(options) >= 4 and not any("odds" in o.lower() for o in options), options
    at.button(key="faithfulness.slice_run").click().run()
    assert_clean(at)
    assert sorted(at.dataframe[0].value["rank (delete)"]) == [1, 2]


@pytest.mark.slow
def test_a_model_with_no_head_gets_a_one_line_error(tmp_path) -> None:
    loaded = toy_bert_head("regression")
    config = loaded.model.config
    config.id2label = {}  # a classifier with zero outputs
    type(loaded.model)(config).save_pretrained(tmp_path)
    loaded.tokenizer.save_pretrained(tmp_path)
    at = open_app(str(tmp_path), ["loo_empty"])
    assert not at.exception, [e.value for e in at.exception]
    shown = errors(at)
    assert any("no classification head to explain: num_labels=0" in e for e in shown), shown
    assert all("\n" not in e for e in shown)
