"""Every page's Methods box is carried by Copy link (the link's ``methods``) and read back by a
new session (AppTest, bundled SST-2 model); the heatmaps page alone did this, so a shared link to
the faithfulness, rationales, sanity-check or adversarial page opened with the default methods."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[1] / "app.py"
PAGES = {
    "app_pages/faithfulness.py": "faithfulness.methods",
    "app_pages/rationales.py": "rationales.methods",
    "app_pages/sanity_checks.py": "sanity.methods",
    "app_pages/adversarial.py": "adversarial.methods",
}


def open_page(page: str, methods: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.switch_page(page)
    # the embedding attack takes gradient methods only: the substitution attack takes every one
    at.query_params.update({"model": "minilm-sst2", "dataset": "free text", "text": "a fine film", "methods": methods,
                            "attack": "substitution"})  # fmt: skip
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("page", PAGES)
def test_a_link_sets_the_methods_and_a_choice_goes_into_the_link(page) -> None:
    key = PAGES[page]
    at = open_page(page, "saliency,loo_empty,bogus")
    assert at.multiselect(key=key).value == ["saliency", "loo_empty"]
    assert any("bogus" in w.value for w in at.warning)
    at.multiselect(key=key).set_value(["grad_x_input"]).run()
    assert at.query_params["methods"] == "grad_x_input"


def test_the_embedding_attack_sets_non_gradient_methods_aside_not_away() -> None:
    """Switching to the embedding attack dropped the chosen perturbation methods for good."""
    at = open_page("app_pages/adversarial.py", "saliency,loo_empty")
    at.radio(key="adversarial.attack").set_value("embedding").run()
    assert at.multiselect(key="adversarial.methods").value == ["saliency"]
    at.radio(key="adversarial.attack").set_value("substitution").run()
    assert at.multiselect(key="adversarial.methods").value == ["saliency", "loo_empty"]
