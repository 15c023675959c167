"""The sidebar keeps what the reader typed or picked in widgets it draws only for some choices
(AppTest, bundled models): Streamlit drops a widget's state while it is not drawn, so the typed
text, the example index, the data file's path and a multi-label model's threshold went back to
their defaults after a switch away and back."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[1] / "app.py"


def new_app(**state) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.session_state["heatmaps.methods"] = ["random"]  # the cheapest method: the sidebar is under test
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def test_typed_text_index_and_data_file_survive_another_dataset(tmp_path) -> None:
    data_file = tmp_path / "reviews.csv"
    data_file.write_text("text,label\na fine film,1\na dull film,0\n")
    at = new_app()
    at.selectbox(key="sidebar.dataset").set_value("free text").run()
    at.text_area(key="sidebar.text").set_value("my own carefully typed review").run()
    at.selectbox(key="sidebar.dataset").set_value("sst2").run()
    at.number_input(key="sidebar.index").set_value(42).run()
    at.selectbox(key="sidebar.dataset").set_value("free text").run()
    assert at.text_area(key="sidebar.text").value == "my own carefully typed review"
    at.selectbox(key="sidebar.dataset").set_value("sst2").run()
    assert at.number_input(key="sidebar.index").value == 42
    at.selectbox(key="sidebar.dataset").set_value("data file").run()
    at.text_input(key="sidebar.data_file").set_value(str(data_file)).run()
    at.selectbox(key="sidebar.dataset").set_value("examples").run()
    at.selectbox(key="sidebar.dataset").set_value("data file").run()
    assert at.text_input(key="sidebar.data_file").value == str(data_file)
    assert not at.exception and not at.error


def test_a_multi_label_threshold_survives_another_model() -> None:
    at = new_app(**{"sidebar.model": "minilm-hatexplain-targets"})
    at.slider(key="sidebar.threshold").set_value(0.2).run()
    at.selectbox(key="sidebar.model").set_value("minilm-sst2").run()
    at.selectbox(key="sidebar.model").set_value("minilm-hatexplain-targets").run()
    assert at.slider(key="sidebar.threshold").value == 0.2
    assert not at.exception and not at.error
