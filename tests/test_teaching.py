"""Teaching mode (issue 18 item 3): a card for every registered method, the Methods page, the
guided tours walked end to end through AppTest, and the presentation setting."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import explainers
import services
from ui import method_cards
from ui.heatmap import colour
from ui.method_notes import NOTES
from ui.theme import PALETTES
from ui.tour_steps import TOURS
from ui.tours import available

APP = Path(__file__).resolve().parents[1] / "app.py"
PAGE_TITLES = {
    "app_pages/heatmaps.py": "Token attribution heatmaps",
    "app_pages/input_marginalization.py": "Input Marginalization",
    "app_pages/faithfulness.py": "Faithfulness",
    "app_pages/rationales.py": "Human rationales",
    "app_pages/sanity_checks.py": "Sanity checks",
    "app_pages/adversarial.py": "Adversarial attacks on explanations",
    "app_pages/roar.py": "Remove and retrain",
}


def app_pages() -> set[str]:
    """The page scripts app.py registers (its PAGES tuple, read without running Streamlit)."""
    tree = ast.parse(APP.read_text(encoding="utf-8"))
    value = next(n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "PAGES")
    return {path for path, *_ in ast.literal_eval(value)}


OFFERED = available(app_pages())


def run_app(page: str | None = None, state: dict | None = None, **query: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=600)
    if page:
        at.switch_page(page)
    at.query_params.update({"model": "minilm-sst2", **query})
    for key, value in (state or {}).items():
        at.session_state[key] = value
    return at.run()


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


# --------------------------------------------------------------------------- the cards


@pytest.mark.parametrize("info", services.methods(), ids=lambda info: info.key)
def test_every_registered_method_gets_a_card(info: services.MethodInfo) -> None:
    card = method_cards.card(info, n_words=7)
    spec = explainers.get(info.key)
    assert card.key == info.key and card.paper == str(spec.paper) and card.paper
    assert card.formula and card.computes and card.pitfalls
    assert card.written == (info.key in NOTES)
    assert [f.name for f in card.fields] == [f.name for f in info.fields]
    if spec.passes is not None:  # the registry's cost model, evaluated on 7 words
        passes = spec.passes(7, spec.make_params())
        if passes.classifier:
            assert card.cost.startswith(f"At most {passes.classifier:,} classifier forward ")
        assert (f"{passes.mlm:,} masked-LM pass" in card.cost) == bool(passes.mlm)
    else:
        assert "units per run" in card.cost


def test_cost_lines_read_as_sentences() -> None:
    """The cards read "Cost. Cost model: at most 1 classifier forward pass (1 of them also
    backward)" and "at most 0 classifier forward passes"; the measured line "1 backward passes"."""
    cost = {info.key: method_cards.card(info, n_words=7).cost for info in services.methods()}
    assert cost["saliency"] == "At most 1 classifier forward and backward pass on 7 words."
    assert cost["integrated_gradients"] == "At most 52 classifier forward passes (50 of them also backward) on 7 words."
    assert cost["loo_empty"] == "At most 8 classifier forward passes on 7 words."
    assert cost["random"] == "No model pass."
    assert services.passes_text(76, 0, 8) == "76 classifier forward passes and 8 masked-LM passes"


def test_the_original_methods_have_hand_written_cards() -> None:
    original = ["loo_empty", "saliency", "grad_x_input", "integrated_gradients", "attention_mean"]
    original += ["attention_rollout", "im", "lime", "lime_mlm", "kernel_shap", "marc", "aml", "random"]
    assert all(key in NOTES for key in original)


def test_a_method_without_a_note_gets_a_generic_card_from_its_flags(monkeypatch) -> None:
    from ui import method_notes

    monkeypatch.delitem(method_notes.NOTES, "lime_mlm")  # as a method registered without a note
    info = next(info for info in services.methods() if info.key == "lime_mlm")
    card = method_cards.card(info, n_words=7)
    assert not card.written and card.formula == method_cards.GENERIC_FORMULA
    assert card.computes == info.description[0].upper() + info.description[1:] + "."
    assert any("masked language model" in p for p in card.pitfalls)
    assert any("seed" in p for p in card.pitfalls)  # sampling noise
    assert not any("gradient" in p for p in card.pitfalls)
    assert "classifier forward passes" in card.cost  # the cost model still comes from the registry


def test_methods_page_shows_a_card_with_formula_parameters_and_a_live_heatmap() -> None:
    at = run_app("app_pages/methods.py", method="integrated_gradients")
    assert_clean(at)
    assert [t.value for t in at.title] == ["Methods"]
    assert "\\int_0^1" in at.get("latex")[0].value
    assert any("Sundararajan et al. 2017, arXiv:1703.01365" in c.value for c in at.caption)
    assert any("\\mathrm{lo}(p) = \\log_2" in c.value and "log-odds" in c.value for c in at.caption)  # notation
    params = next(d.value for d in at.dataframe if "parameter" in d.value.columns)
    assert {"n_steps", "baseline"} <= set(params["parameter"])
    assert any("Baseline choice" in m.value for m in at.markdown)  # a pitfall
    live = [h.value for h in at.html if 'data-method="integrated_gradients"' in h.value]
    words = services.free_text_example(method_cards.SENTENCE, "").words
    assert live and all(f">{w}</td>" in live[0] for w in words if w.isalpha())
    measured = next(c.value for c in at.caption if c.value.startswith("Measured:"))
    assert re.search(r"\d+ classifier forward passes \(50 of them also backward\)", measured)  # 50 IG steps
    overview = next(d.value for d in at.dataframe if "family" in d.value.columns)
    assert list(overview["method"]) == list(explainers.REGISTRY)  # every registered method is listed
    assert at.query_params["method"] == "integrated_gradients"


def test_a_mask_optimiser_card_waits_for_a_click() -> None:
    at = run_app("app_pages/methods.py", method="aml")
    assert_clean(at)
    assert at.button(key="methods.live.aml")
    assert not [h for h in at.html if 'data-method="aml"' in h.value]
    assert any("units per run" in m.value for m in at.markdown)  # the registry's steps cost model


@pytest.mark.slow  # MaRC's 300 steps: 5 s on a quiet machine, 55 s beside a reproduction
def test_a_mask_optimisers_live_result_stays_after_its_click() -> None:
    """The live heatmap of a mask optimiser was tied to the click and gone on the next rerun."""
    at = run_app("app_pages/methods.py", method="marc")
    at.button(key="methods.live.marc").click().run()
    assert_clean(at)
    assert [h for h in at.html if 'data-method="marc"' in h.value]
    at.run()  # any later rerun (another control, a tour step): the cached result is still shown
    assert [h for h in at.html if 'data-method="marc"' in h.value]


# --------------------------------------------------------------------------- the tours


def page_title(at: AppTest) -> str:
    return at.title[0].value if at.title else ""


def panel(at: AppTest) -> str:
    return next((m.value for m in at.markdown if m.value.startswith("**Tour:")), "")


def test_every_tour_is_offered_except_roar_until_its_page_exists() -> None:
    offered = {tour.key for tour in OFFERED}
    assert {tour.key for tour in TOURS} - offered <= {"roar"}
    assert ("roar" in offered) == ("app_pages/roar.py" in app_pages())


@pytest.mark.slow
@pytest.mark.parametrize("tour", OFFERED, ids=lambda tour: tour.key)
def test_a_tour_runs_end_to_end_from_the_first_page(tour) -> None:
    """Pick the tour in the sidebar of the first page, press Start, then Next through every step:
    each step opens its page with its sidebar selection and widget values and says what to look at."""
    at = run_app(state={"tour.picker": tour.key})
    assert_clean(at)
    assert page_title(at) == PAGE_TITLES["app_pages/heatmaps.py"]
    at.button(key="tour.start").click().run()
    for index, step in enumerate(tour.steps):
        assert_clean(at)
        assert page_title(at).startswith(PAGE_TITLES[step.page]), step.title
        assert f"step {index + 1} of {len(tour.steps)}: **{step.title}**" in panel(at)
        assert at.session_state["sidebar.model"] == step.model
        if step.typed is not None:
            assert (at.session_state["sidebar.dataset"], at.session_state["sidebar.text"]) == ("free text", step.typed)
        else:
            assert (at.session_state["sidebar.split"], at.session_state["sidebar.index"]) == (step.split, step.index)
        for key, value in step.state.items():
            assert at.session_state[key] == value, key
        if index + 1 < len(tour.steps):
            at.button(key="tour.next").click().run()
    assert not [b for b in at.button if b.key == "tour.next"]
    at.button(key="tour.end").click().run()
    assert not panel(at)


@pytest.mark.slow
def test_the_sanity_tour_runs_the_check_it_points_to() -> None:
    """The second step of the sanity tour, its Run button pressed: the cascading curves appear."""
    at = run_app(state={"tour.picker": "sanity"})
    at.button(key="tour.start").click().run()
    at.button(key="tour.next").click().run()
    at.session_state["sanity.methods"] = ["saliency", "attention_rollout"]  # two of the tour's four, for time
    at.button(key="sanity.run").click().run()
    assert_clean(at)
    assert any(chart.key == "sanity.curves" for chart in at.get("plotly_chart"))


def test_the_double_trouble_tour_opens_on_its_word_after_im_was_used_on_another_text() -> None:
    """The IM page resets its word when the text changes; a tour's step sets the word for its own
    text, which the reset took back to leave-one-out's top word (20, "silly", not 19, "is")."""
    at = run_app("app_pages/input_marginalization.py", dataset="free text", text="a fine and moving film")
    assert at.session_state["im.word.for"] is not None
    at.session_state["tour.picker"] = "double_trouble"
    at.run()
    at.button(key="tour.start").click().run()
    assert_clean(at)
    assert page_title(at).startswith(PAGE_TITLES["app_pages/input_marginalization.py"])
    assert at.selectbox(key="im.word").value == 19


def test_the_double_trouble_word_is_one_the_masked_lm_restores() -> None:
    """The tour says 'is' (word 19 of bundled SST-2 sentence 8) gets a large LOO score and almost no
    IM score because the masked LM's top fill-in is the word itself; check that on the bundled models."""
    import api
    from core.datasets import load_bundled_examples

    example = load_bundled_examples(split="sst2")[8]
    assert example.words[18:21] == ("villain", "is", "silly")
    result = api.explain("minilm-sst2", example, ["loo_empty", "im"])
    loo, im = float(result["loo_empty"].scores[19]), float(result["im"].scores[19])
    assert loo > 0.8 and abs(im) < 0.1 * loo
    extras = result["im"].extras
    assert extras["top1"][19] == "is" and extras["top1_is_original"][19]


# --------------------------------------------------------------------------- presentation


def test_presentation_setting_is_kept_in_the_url_and_changes_fonts_and_palette() -> None:
    at = run_app(present="1", methods="random", dataset="examples", split="sst2", index="0")
    assert_clean(at)
    assert at.session_state["presentation.on"] is True and at.session_state["presentation.setting"] is True
    assert at.query_params["present"] == "1"
    assert any("font-size: 21px" in h.value for h in at.html)
    body = next(h.value for h in at.html if 'data-role="heatmap"' in h.value)
    strongest = colour(1.0, "high_contrast")
    assert strongest == "#67001f" and strongest in body and colour(1.0) not in body
    plain = run_app(methods="random")
    assert "present" not in plain.query_params
    assert not any("font-size: 21px" in h.value for h in plain.html)


def test_presentation_link_reads_yes_and_names_a_value_it_does_not_know() -> None:
    """``present=yes`` was read as off without a word."""
    assert run_app(present="Yes", methods="random").session_state["presentation.on"] is True
    at = run_app(present="maybe", methods="random")
    assert_clean(at)
    assert at.session_state["presentation.on"] is False and "present" not in at.query_params
    assert [w.value for w in at.warning if "presentation mode" in w.value] == [
        "The link asks for presentation mode “maybe”, which is none of 1, yes, true, on (or 0, no, false, off); it is off."
    ]


def test_high_contrast_palette_lifts_small_scores() -> None:
    assert colour(-1.0, "high_contrast") == "#053061" and colour(0.0, "high_contrast") == "#ffffff"
    # gamma 0.6: a tenth of the largest score is already a quarter of the way to the end colour
    low = int(colour(0.1, "high_contrast")[3:5], 16)  # green channel, 255 -> 0
    assert 255 - low > 0.24 * 255 and set(PALETTES) == {"default", "high_contrast"}
