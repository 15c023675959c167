"""Shared mode through the whole app (AppTest with the environment set): the free model field is
gone, a model named in a link outside the allow-list gets the same message whether or not the path
exists and loads nothing, an allowed model works, and the password blocks every page until given."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from services import access

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
        errors = [e.value for e in at.error]
        assert errors, model
        messages.append(errors[0].replace(repr(model), "MODEL"))
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
