"""``ui.text.clipped``: the one cut of a label that would run past its box (the ROAR and adversarial
pages' example selects, the rationale slice's buttons, a link's quoted value)."""

from __future__ import annotations

from ui.text import clipped


def test_a_text_within_the_limit_is_kept_as_it_is() -> None:
    assert clipped("a film", 6) == "a film"
    assert clipped("", 3) == ""


def test_a_longer_text_is_cut_to_the_limit_with_an_ellipsis_as_its_last_character() -> None:
    assert clipped("a film to see", 6) == "a fil…"
    cut = clipped("word " * 40, 50)
    assert len(cut) == 50 and cut.endswith("…") and cut[:-1] == ("word " * 40)[:49]


def test_a_long_model_name_keeps_whole_parts_and_its_last_part_around_an_ellipsis() -> None:
    from ui.text import shortened_name

    assert shortened_name("minilm-sst2", 22) == "minilm-sst2"
    assert shortened_name("minilm-hatexplain-targets", 22) == "…hatexplain-targets"  # was "minilm-hat…ain-targets"
    assert shortened_name("minilm-hatexplain-score", 22) == "…hatexplain-score"
    assert shortened_name("bert-base-uncased-SST-2", 22) == "bert-…uncased-SST-2"  # "SST-2" is one part
    assert shortened_name("distilbert-base-uncased-finetuned-sst-2-english", 22) == "distilbert-…english"
    for name in ("roberta-base-openai-detector", "twitter-roberta-base-sentiment-latest"):
        assert len(shortened_name(name, 22)) <= 22


def test_a_long_name_without_parts_that_fit_keeps_characters_from_both_ends() -> None:
    from ui.text import shortened_name

    assert shortened_name("averyveryverylongmodelnamewithoutseparators", 22) == "averyveryv…tseparators"
    assert shortened_name("a-" + "b" * 40 + "-c", 22) == "a-bbbbbbbb…bbbbbbbbb-c"
