"""Findings of a browser walk of the app, checked through AppTest on the tiny random BERT: the
tables keep one number format per column, the rationale heatmap's 0/1 rows get a two-value
legend, and the removal comparison runs under one progress bar."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.page_text import open_on_model, shown_cells

APP = Path(__file__).resolve().parents[1] / "app.py"
TEXT = "the movie was great but the plot was bad ."


def open_app(model: str, page: str, **state: object) -> AppTest:
    at = open_on_model(model, page, **state)
    assert not at.exception, [e.value for e in at.exception]
    return at


def decimals(cells: list[str]) -> set[int]:
    """How many digits each number shows after its decimal point."""
    return {len(c.split(".")[1]) if "." in c else 0 for c in cells}


def test_the_sanity_head_table_has_one_format_per_column(toy_bert_folder) -> None:
    """The head-reset table showed ``47.619`` next to ``0`` in one column (and the table of every
    measure mixed formats as well)."""
    state = {"sidebar.dataset": "free text", "sidebar.text": TEXT, "sanity.methods": ["grad_x_input", "random"]}
    at = open_app(toy_bert_folder, "app_pages/sanity_checks.py", **state)
    at.button(key="sanity.run").click().run()
    assert not at.exception and not at.error
    head = next(d for d in at.dataframe if "words changing sign (%)" in d.value.columns)
    measures = next(d for d in at.dataframe if "sign_change" in d.value.columns)
    for table in (head, measures):
        for column, cells in shown_cells(table).items():
            if column not in ("method", "step"):
                assert len(decimals(cells)) == 1, (column, cells)


def test_the_rationale_heatmap_has_a_two_value_legend(toy_bert_folder) -> None:
    """The heatmap of the human masks and the words each method selects (every row 0/1) had the
    continuous colour bar of scores as its legend."""
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.query_params.update({"model": toy_bert_folder, "dataset": "esnli", "split": "dev_highlighted", "index": "0"})
    at.session_state["heatmaps.methods"] = []
    at.session_state["rationales.methods"] = ["random"]
    at.run()
    at.switch_page("app_pages/rationales.py").run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    binary, scores = [h.value for h in at.html if 'data-role="heatmap"' in h.value]
    assert 'data-method="human · majority"' in binary and 'data-method="random · ' in binary
    legend = binary[: binary.index('data-role="heatmap"')]
    assert "linear-gradient" not in legend and "max" not in legend
    assert "highlighted (human rows) or selected (method rows)" in legend and "not highlighted or selected" in legend
    assert "linear-gradient" in scores[: scores.index('data-role="heatmap"')]  # the continuous scores keep the bar


def test_the_removal_comparison_runs_under_one_progress_bar(toy_bert_folder, monkeypatch) -> None:
    """The second removal compared (a tenth of a second: it scores the attributions the first one
    kept) started the progress bar again from zero."""
    import streamlit
    from streamlit.elements.progress import ProgressMixin

    bars: list[list[float]] = []
    make, update = streamlit.progress, ProgressMixin.progress

    def new_bar(value, text=None, **kwargs):
        bars.append([float(value)])
        return make(value, text=text, **kwargs)

    def moved(self, value, text=None, **kwargs):
        if bars:
            bars[-1].append(float(value))
        return update(self, value, text=text, **kwargs)

    state = {"sidebar.dataset": "examples", "sidebar.split": "sst2", "faithfulness.methods": ["random"]}
    at = open_app(toy_bert_folder, "app_pages/faithfulness.py", **state)
    at.segmented_control(key="faithfulness.view").set_value("Removal modes compared").run()
    at.number_input(key="faithfulness.slice_n").set_value(2).run()
    monkeypatch.setattr(streamlit, "progress", new_bar)
    monkeypatch.setattr(ProgressMixin, "progress", moved)
    at.button(key="faithfulness.slice_run").click().run()
    assert not at.exception and not at.error
    assert "rank change" in at.dataframe[0].value.columns
    assert len(bars) == 1, bars
    assert bars[0] == sorted(bars[0]) and bars[0][-1] == 1.0, bars
