"""Shared mode through the whole app (AppTest with the environment set): the free model field is
gone, a model named in a link outside the allow-list gets the same message whether or not the path
exists and loads nothing, an allowed model works, and the password blocks every page until given."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from services import access
from tests.page_text import errors

APP = Path(__file__).resolve().parents[1] / "app.py"
PAGES = [
    "app_pages/heatmaps.py",
    "app_pages/faithfulness.py",
    "app_pages/rationales.py",
    "app_pages/sanity_checks.py",
    "app_pages/adversarial.py",
    "app_pages/explorer.py",
]


@pytest.fixture
def shared(monkeypatch, tmp_path):
    monkeypatch.setenv(access.SHARED_ENV, "1")
    monkeypatch.delenv(access.MODELS_ENV, raising=False)
    monkeypatch.delenv(access.PASSWORD_ENV, raising=False)
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path / "results"))
    access.policy.clear()
    yield monkeypatch
    access.policy.clear()


def run(model: str | None = None, **state) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=300)
    if model is not None:
        at.query_params["model"] = model
    at.session_state["heatmaps.methods"] = ["random"]
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def test_links_to_other_models_get_one_message_and_the_field_is_gone(shared) -> None:
    messages = []
    for model in ("/etc", "/nonexistent", "/root/.cache"):
        at = run(model)
        assert not at.exception
        assert not [t for t in at.text_input if t.key == "sidebar.model_path"]
        shown = errors(at)
        assert shown, model
        messages.append(shown[0].replace(repr(model), "MODEL"))
    assert len(set(messages)) == 1 and "not offered on this server" in messages[0]


def test_an_allowed_model_works(shared) -> None:
    at = run("minilm-sst2")
    assert not at.exception and not at.error
    assert 'data-method="random"' in "".join(h.value for h in at.html)


def test_the_password_blocks_every_page_until_given(shared) -> None:
    shared.setenv(access.PASSWORD_ENV, "open sesame")
    access.policy.clear()
    for page in PAGES:
        at = AppTest.from_file(str(APP), default_timeout=300)
        at.run()
        at.switch_page(page).run()
        assert not at.exception
        assert [t.label for t in at.text_input] == ["Password"], page
        assert not at.get("plotly_chart") and not [h for h in at.html if "hm-row" in h.value]
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.session_state["heatmaps.methods"] = ["random"]
    at.run()
    at.text_input(key="access.password").input("wrong")
    at.button[0].click().run()
    assert any("not the password" in e.value for e in at.error)
    at.text_input(key="access.password").input("open sesame")
    at.button[0].click().run()
    assert not at.exception
    assert 'data-method="random"' in "".join(h.value for h in at.html)


def start(limit: int) -> str:
    import services

    return services.runs.start_run("minilm-sst2", "examples", "sst2", limit, ["random"], ["deletion"])


def test_one_background_job_at_a_time_in_shared_mode(shared, started) -> None:
    """While a run this server started goes on, no other run or ROAR job starts (one line says
    why); once it is done the next one starts. Asking again for the run that goes on is no new
    process."""
    from services import roar

    first = start(1)
    assert start(1) == first and len(started) == 1  # the same run: it is being written
    busy = rf"^this server runs one background job at a time and {first} is still running: try later$"
    with pytest.raises(ValueError, match=busy):
        start(2)
    with pytest.raises(ValueError, match=busy):
        roar.start_job(
            {"methods": ["loo_empty"], "levels": ["10%"], "seeds": 2, "task": "sst2", "train_size": 8, "eval_size": 8}
        )
    assert len(started) == 1
    started[0].finish()
    start(2)
    assert len(started) == 2


def test_private_mode_starts_background_jobs_side_by_side(shared, started) -> None:
    shared.delenv(access.SHARED_ENV)
    access.policy.clear()
    start(1)
    start(2)
    assert len(started) == 2 and all(p.poll() is None for p in started)


def test_a_links_refused_model_gives_way_to_a_listed_one(shared) -> None:
    """The link's model stayed in the hidden field and won over the picker: every page kept saying
    "not offered on this server" whatever the visitor picked, and a reload brought it back."""
    at = run("textattack/bert-base-uncased-SST-2")
    assert "not offered on this server" in errors(at)[0]
    listed = at.selectbox(key="sidebar.model").value
    at.button(key="sidebar.drop_link_model").click().run()
    assert not at.exception and not errors(at)
    assert 'data-method="random"' in "".join(h.value for h in at.html)
    assert at.query_params["model"] == listed  # the link now names the model shown
    again = run("textattack/bert-base-uncased-SST-2")
    other = next(name for name in again.selectbox(key="sidebar.model").options if name != listed)
    again.selectbox(key="sidebar.model").set_value(other).run()
    assert not again.exception and not errors(again)
    assert not [b for b in again.button if b.key == "sidebar.drop_link_model"]
