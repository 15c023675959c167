"""Links (AppTest): the sidebar mirrors model, dataset, split, example, target and typed text into
the query parameters, a new session opened with them shows the same selection, and a value of a
link that the app cannot show is named in one escaped warning rather than swapped silently."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import services
from tests.page_text import as_read
from ui.sidebar_link import LINK_TEXT_MAX

APP = Path(__file__).resolve().parents[1] / "app.py"
EXAMPLE = {"model": "minilm-sst2", "dataset": "examples", "split": "sst2", "index": "3"}
PAIR = {"model": "minilm-esnli", "dataset": "free text"}
# link parameters -> the warning it gets (as read); a page of its own where it is not Heatmaps
BAD = {
    "negative index": ({"index": "-3"}, "The link's example index “-3” is not an example number: showing example 0."),
    "float index": ({"index": "1e3"}, "The link's example index “1e3” is not an example number: showing example 0."),
    "20-digit index": ({"index": "9" * 20}, f"example index “{'9' * 20}” is not an example number"),
    "markup dataset": (
        {"dataset": "<b>bad</b>", "split": "zzz"},
        "The link's dataset “<b>bad</b>” is not one of this app's (examples",
    ),
    "unknown split": ({"split": "nosuch"}, "examples has no split “nosuch”: showing sst2."),
    "unknown dataset, its split and index": (  # the split and index were dropped without a word
        {"dataset": "nope", "split": "x", "index": "-3"},
        "free text, data file): showing examples (its split “x” and index “-3” are left out too).",
    ),
    "target not a class": ({"target": "7"}, "The model has no class 7 (0–1): explaining the predicted class."),
    "target not a number": ({"target": "<i>x"}, "The link's target “<i>x” is not a class number"),
    "target of one score": (
        {"model": "minilm-hatexplain-score", "target": "1"},
        "The model gives one score, not classes: target 1 is left out.",
    ),
}
BAD_METHODS = ["nosuch", "<script>x"]
UNESCAPED = re.compile(r"(?<!\\)[<>]")  # markup a warning would render


def open_link(params: dict[str, str], page: str | None = None, state: dict | None = None) -> AppTest:
    """A new session opened with a link's query parameters (the cheap random baseline on Heatmaps)."""
    at = AppTest.from_file(str(APP), default_timeout=300)
    if page:
        at.switch_page(page)
    at.query_params.update({"methods": "random", **params})
    for key, value in (state or {}).items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def written_link(at: AppTest) -> dict[str, str]:
    """The query parameters the page wrote: those of its Copy link."""
    return {key: at.query_params[key] for key in at.query_params}


def shown(at: AppTest) -> tuple:
    """The selection on screen: model, dataset, split, index, target and the example's words."""
    chosen = at.session_state["selection"]
    words = chosen.example.segments if chosen.example else None
    return chosen.model, chosen.dataset, chosen.split, chosen.index, chosen.target, words


def warnings(at: AppTest) -> list[str]:
    """The page's warnings as sent (markdown escapes and all)."""
    return [w.value for w in at.warning]


# --------------------------------------------------------------------------- target


def test_the_link_keeps_the_target_class_and_a_new_session_shows_it() -> None:
    at = open_link(EXAMPLE)
    assert "target" not in at.query_params  # the default, the predicted class, is left out
    at.sidebar.selectbox(key="sidebar.target").set_value(0).run()  # negative
    link = written_link(at)
    assert link["target"] == "0"
    opened = open_link(link)
    assert opened.sidebar.selectbox(key="sidebar.target").value == 0
    assert shown(opened) == shown(at) and shown(opened)[4] == 0
    assert not warnings(opened)


# --------------------------------------------------------------------------- free text


def test_a_link_carries_the_typed_text_and_hypothesis() -> None:
    """A link's text and hypothesis open in the text fields; text typed after it is in the link
    the page writes, and a new session opened with that link shows the same pair."""
    at = open_link({**PAIR, "text": "A man <b>sleeps</b> & snores.", "text_b": "Nobody sleeps."})
    assert at.sidebar.text_area(key="sidebar.text").value == "A man <b>sleeps</b> & snores."
    assert at.sidebar.text_area(key="sidebar.text_b").value == "Nobody sleeps."
    assert shown(at)[5] == services.free_text_example("A man <b>sleeps</b> & snores.", "Nobody sleeps.").segments
    at.sidebar.text_area(key="sidebar.text").input("Two dogs run in a park.").run()
    link = written_link(at)
    assert (link["text"], link["text_b"]) == ("Two dogs run in a park.", "Nobody sleeps.")
    opened = open_link(link)
    assert shown(opened) == shown(at)
    assert shown(opened)[5] == services.free_text_example("Two dogs run in a park.", "Nobody sleeps.").segments


def test_a_text_too_long_for_a_link_is_left_out_and_said_so() -> None:
    long = "word " * (LINK_TEXT_MAX // 5) + "end"
    at = open_link({"model": "minilm-sst2", "dataset": "free text"}, state={"sidebar.text": long})
    assert "text" not in at.query_params
    notes = [as_read(c.value) for c in at.sidebar.caption]
    assert (
        f"The text ({len(long):,} characters) is too long for a link (at most 1,000): Copy link leaves it out." in notes
    )
    at.sidebar.text_area(key="sidebar.text").input(long[:LINK_TEXT_MAX]).run()
    assert at.query_params["text"] == long[:LINK_TEXT_MAX] and not any(
        "too long" in c.value for c in at.sidebar.caption
    )


# --------------------------------------------------------------------------- bad values


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_link_value_is_named_once_and_escaped(case: str) -> None:
    params, message = BAD[case]
    at = open_link({**EXAMPLE, **params})
    named = [w for w in warnings(at) if message in as_read(w)]
    assert len(named) == 1, warnings(at)
    assert not UNESCAPED.search(named[0])  # markup of the link is shown as text
    assert not at.run().warning  # the value was replaced: nothing to say on the next run


@pytest.mark.parametrize("method", BAD_METHODS)
def test_an_unknown_method_card_in_the_link_is_named(method: str) -> None:
    at = open_link({"model": "minilm-sst2", "method": method}, page="app_pages/methods.py")
    named = [as_read(w) for w in warnings(at)]
    assert named == [f"The link's method “{method}” is not a method of this app: showing loo_empty."], named
    assert not UNESCAPED.search(warnings(at)[0])
    assert at.query_params["method"] == "loo_empty"
    assert not at.run().warning


# --------------------------------------------------------------------------- page settings


def test_the_link_carries_the_heatmap_page_settings_and_a_new_session_shows_them() -> None:
    """Copy link said "a link to this exact view" but the colour scale and the token view came back
    at their defaults; they are in the link now, and left out while at their defaults."""
    at = open_link(EXAMPLE)
    assert "scale" not in written_link(at) and "tokens" not in written_link(at)
    at.toggle(key="heatmaps.shared_scale").set_value(True).run()
    at.segmented_control(key="heatmaps.view").set_value("subwords").run()
    link = written_link(at)
    assert (link["scale"], link["tokens"]) == ("1", "subwords")
    again = open_link(link)
    assert again.toggle(key="heatmaps.shared_scale").value is True
    assert again.segmented_control(key="heatmaps.view").value == "subwords"


def test_the_link_carries_the_faithfulness_view_and_removals() -> None:
    params = {**EXAMPLE, "view": "Removal modes compared", "removal_a": "mask", "removal_b": "unk"}
    at = open_link(params, page="app_pages/faithfulness.py", state={"faithfulness.methods": ["random"]})
    assert at.segmented_control(key="faithfulness.view").value == "Removal modes compared"
    assert (at.selectbox(key="faithfulness.compare_a").value, at.selectbox(key="faithfulness.compare_b").value) == (
        "mask",
        "unk",
    )
    assert {k: written_link(at)[k] for k in ("view", "removal_a", "removal_b")} == {
        "view": "Removal modes compared", "removal_a": "mask", "removal_b": "unk"
    }  # fmt: skip
    at.segmented_control(key="faithfulness.view").set_value("This example").run()
    assert "view" not in written_link(at)


def test_the_link_carries_the_faithfulness_budget_and_bins() -> None:
    params = {**EXAMPLE, "budget": "45", "bins": "marc"}
    at = open_link(params, page="app_pages/faithfulness.py", state={"faithfulness.methods": ["random"]})
    assert at.slider(key="faithfulness.budget").value == 45
    assert at.radio(key="faithfulness.bins").value == "marc"
    assert {k: written_link(at)[k] for k in ("budget", "bins")} == {"budget": "45", "bins": "marc"}
    at.slider(key="faithfulness.budget").set_value(20).run()
    assert "budget" not in written_link(at)
    off_step = open_link({**EXAMPLE, "budget": "42"}, page="app_pages/faithfulness.py")
    assert [as_read(w) for w in warnings(off_step) if "budget" in as_read(w)] == [
        "The link asks for budget “42”, which is none of the multiples of 5 from 5 to 100: “20” is shown."
    ]


def test_a_page_setting_the_link_cannot_take_is_named_and_the_default_shown() -> None:
    at = open_link({**EXAMPLE, "mode": "<b>sideways</b>"}, page="app_pages/sanity_checks.py")
    named = [as_read(w) for w in warnings(at) if "mode" in as_read(w)]
    assert named == [
        "The link asks for mode “<b>sideways</b>”, which is none of cascading, independent: “cascading” is shown."
    ], warnings(at)
    assert not UNESCAPED.search(next(w for w in warnings(at) if "sideways" in w))
    assert at.segmented_control(key="sanity.mode").value == "cascading"
    assert not [w for w in at.run().warning if "sideways" in w.value]  # said once


def test_a_toggle_the_link_cannot_take_is_named_as_on_and_off() -> None:
    """``scale=maybe`` was answered "which is none of 0, 1: “0” is shown", the toggle's own values."""
    at = open_link({**EXAMPLE, "scale": "maybe"})
    assert [as_read(w) for w in warnings(at) if "scale" in as_read(w)] == [
        "The link asks for scale “maybe”, which is none of 0 (off), 1 (on): 0 (off) is shown."
    ]


def test_the_link_carries_the_rationale_settings() -> None:
    """tau, the human mask, the selection and k came back at their defaults from a copied link."""
    esnli = {"model": "minilm-esnli", "dataset": "esnli", "split": "dev_highlighted", "index": "0"}
    params = {**esnli, "tau": "0.3", "select": "threshold", "k": "4"}
    at = open_link(params, page="app_pages/rationales.py", state={"rationales.methods": ["random"]})
    assert at.slider(key="rationales.threshold").value == pytest.approx(0.3)
    assert at.radio(key="rationales.selection").value == "threshold"
    assert at.number_input(key="rationales.k").value == 4
    assert {k: written_link(at)[k] for k in ("tau", "select", "k")} == {"tau": "0.3", "select": "threshold", "k": "4"}
    at.radio(key="rationales.selection").set_value("top_k").run()
    assert "select" not in written_link(at)


def test_the_link_carries_the_roar_job() -> None:
    from services import roar
    from ui.roar import source_labels

    jobs = list(source_labels(roar.bundled(), roar.stored_jobs()))
    at = open_link({"model": "minilm-sst2"}, page="app_pages/roar.py")
    assert len(jobs) > 1 and "job" not in written_link(at)  # the first job: left out
    at.selectbox(key="roar.source").set_value(jobs[1]).run()
    picked = written_link(at)["job"]
    assert picked == jobs[1]
    again = open_link({"model": "minilm-sst2", "job": picked}, page="app_pages/roar.py")
    assert again.selectbox(key="roar.source").value == picked


def test_the_link_carries_the_sanity_seed_and_top_k_share() -> None:
    at = open_link({**EXAMPLE, "seed": "17", "top_k": "0.35"}, page="app_pages/sanity_checks.py")
    assert at.number_input(key="sanity.seed").value == 17
    assert at.slider(key="sanity.top_k").value == pytest.approx(0.35)
    assert {k: written_link(at)[k] for k in ("seed", "top_k")} == {"seed": "17", "top_k": "0.35"}
    at.number_input(key="sanity.seed").set_value(0).run()
    assert "seed" not in written_link(at)


@pytest.mark.parametrize("seed", ["-1", "1e3", "9" * 30, "٣"])
def test_a_seed_the_link_cannot_take_is_named(seed: str) -> None:
    at = open_link({**EXAMPLE, "seed": seed}, page="app_pages/sanity_checks.py")
    named = [as_read(w) for w in warnings(at) if "seed" in as_read(w)]
    assert named == [
        f"The link asks for seed “{seed}”, which is none of the whole numbers 0 to 2,147,483,647: “0” is shown."
    ]
    assert at.number_input(key="sanity.seed").value == 0


def test_the_link_carries_the_word_whose_fill_ins_the_im_page_shows() -> None:
    at = open_link({**EXAMPLE, "word": "2"}, page="app_pages/input_marginalization.py")
    assert at.selectbox(key="im.word").value == 2
    assert written_link(at)["word"] == "2"
    out_of_range = open_link({**EXAMPLE, "word": "99"}, page="app_pages/input_marginalization.py")
    last = len(out_of_range.session_state["selection"].example.words) - 1
    shown_word = out_of_range.selectbox(key="im.word").value
    said = f"The link asks for word “99”, which is none of the whole numbers 0 to {last}: “{shown_word}” is shown."
    assert [as_read(w) for w in warnings(out_of_range) if "word" in as_read(w)] == [said]
    assert "word" not in written_link(out_of_range)


def test_the_link_carries_the_method_parameters_changed_from_their_defaults() -> None:
    at = open_link(EXAMPLE)
    assert "params" not in written_link(at)
    at.multiselect(key="heatmaps.methods").set_value(["random", "lime"]).run()
    at.number_input(key="heatmaps.param.lime.n_samples").set_value(60).run()
    link = written_link(at)
    assert link["params"] == '{"lime":{"n_samples":60}}'
    again = open_link(link)
    assert again.number_input(key="heatmaps.param.lime.n_samples").value == 60
    assert not warnings(again)
    on_faithfulness = open_link(
        link, page="app_pages/faithfulness.py", state={"faithfulness.methods": ["random", "lime"]}
    )
    assert on_faithfulness.number_input(key="faithfulness.param.lime.n_samples").value == 60


@pytest.mark.parametrize(
    "asked, named",
    [
        ("not json", "The link's method parameters “not json” are not a JSON object of parameters by method"),
        ("[" * 3000, "[[[[…” are not a JSON object"),
        ('{"lime": 3}', "are not a JSON object of parameters by method"),
        ('{"lime": {"n_samples": -4, "nosuch": 1}, "<b>x</b>": {}}', "lime.n_samples=-4, lime.nosuch, <b>x</b>"),
    ],
)
def test_method_parameters_the_link_cannot_take_are_named(asked: str, named: str) -> None:
    at = open_link({**EXAMPLE, "methods": "random,lime", "params": asked})
    said = [as_read(w) for w in warnings(at) if "method parameters" in as_read(w)]
    assert len(said) == 1 and named in said[0], said
    assert not UNESCAPED.search(next(w for w in warnings(at) if "method parameters" in w))
    assert at.number_input(key="heatmaps.param.lime.n_samples").value == 1000  # the default


def test_the_link_carries_the_im_pages_and_the_attacks_own_parameters() -> None:
    at = open_link({**EXAMPLE, "im_params": '{"k":5}'}, page="app_pages/input_marginalization.py")
    assert at.number_input(key="im.param.im.k").value == 5
    assert written_link(at)["im_params"] == '{"k":5}'
    at.number_input(key="im.param.lime.n_samples").set_value(300).run()
    assert written_link(at)["lime_params"] == '{"n_samples":300}'
    lime = open_link({**EXAMPLE, "lime_params": '{"n_samples":40}'}, page="app_pages/input_marginalization.py")
    assert lime.number_input(key="im.param.lime.n_samples").value == 40
    assert lime.session_state["im.gallery.tab"] == "LIME"  # such a link opens the LIME tab
    lime.session_state["im.gallery.tab"] = "Leave-one-out"  # another tab: LIME's values and link stay
    lime.run()
    assert lime.number_input(key="im.param.lime.n_samples").value == 40
    assert written_link(lime)["lime_params"] == '{"n_samples":40}'
    attack = open_link({**EXAMPLE, "attack_params": '{"steps":3}'}, page="app_pages/adversarial.py")
    assert attack.number_input(key="adversarial.quick.param.attack_embedding.steps").value == 3
    assert written_link(attack)["attack_params"] == '{"steps":3}'
    attack.number_input(key="adversarial.quick.param.attack_embedding.steps").set_value(60).run()  # the preset's
    assert "attack_params" not in written_link(attack)


def test_a_forms_parameters_the_link_cannot_take_are_named() -> None:
    at = open_link({**EXAMPLE, "im_params": '{"k": 0, "nosuch": 1}'}, page="app_pages/input_marginalization.py")
    said = [as_read(w) for w in warnings(at) if "im parameters" in as_read(w)]
    assert said == [
        "The link asks for im parameters this page cannot take (“im.k=0, im.nosuch”): their defaults are shown."
    ]
    assert at.number_input(key="im.param.im.k").value == 10
    not_an_object = open_link({**EXAMPLE, "im_params": "[1]"}, page="app_pages/input_marginalization.py")
    assert [as_read(w) for w in warnings(not_an_object) if "im parameters" in as_read(w)] == [
        "The link's im parameters “[1]” are not a JSON object of parameters: the defaults are shown."
    ]
