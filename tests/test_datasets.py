"""Dataset loaders: the real files (counts, masks), hand-made parsing cases, hub converters
on small files written in the hub's formats, and the bundled examples.

Tests on the real datasets need ``ATTRIBUTION_DATA_DIR`` (e.g. ``../shared/data``). Without it
they are skipped, each saying so; with it set to a folder that is missing or incomplete they fail.
"""

from __future__ import annotations

import csv
import json
import os
from collections import Counter
from pathlib import Path

import pytest

from core import hub_datasets as hub
from core.datasets import (
    DATA_DIR_ENV,
    DATASET_NAMES,
    ESNLI_LABELS,
    EXAMPLES_FILE,
    HATEXPLAIN_LABELS,
    available_datasets,
    available_splits,
    data_dir,
    load_bundled_examples,
    load_examples,
    majority_mask,
    split_words,
)
from core.datasets.esnli import align_mask, parse_esnli_highlights
from core.datasets.hatexplain import hatexplain_example
from core.datasets.movies import movie_example, span_mask
from core.types import Example

ESC_ON, ESC_OFF = "\x1b[0;30;43m", "\x1b[0m"


# --------------------------------------------------------------------------- the data folder


@pytest.fixture(scope="module")
def root() -> Path:
    chosen = os.environ.get(DATA_DIR_ENV)
    if not chosen:
        pytest.skip(f"{DATA_DIR_ENV} is not set: skipping the tests on the real datasets (set it to the data folder)")
    folder = data_dir(chosen)
    if folder is None:
        pytest.fail(f"{DATA_DIR_ENV}={chosen!r} is not a folder")
    return folder


def need(root: Path, *relative: str) -> None:
    for rel in relative:
        if not (root / rel).exists():
            pytest.fail(f"{root / rel} is missing from the data folder {root} ({DATA_DIR_ENV})")


def check_masks(examples: list[Example]) -> None:
    for e in examples:
        for mask in (*e.rationales, *((e.rationale,) if e.rationale is not None else ())):
            assert len(mask) == len(e.words), e.id
            assert set(mask) <= {0, 1}, e.id


# --------------------------------------------------------------------------- SST-2


def test_sst2_dev(root):
    need(root, "sst2/dev.tsv")
    examples = load_examples("sst2", "dev", root=root)
    assert len(examples) == 872
    assert Counter(e.label for e in examples) == {1: 444, 0: 428}
    assert all(e.words and e.rationale is None and not e.is_pair for e in examples)
    assert examples[0].label_names == ("negative", "positive")
    assert len({e.id for e in examples}) == 872


def test_sst2_test_is_unlabelled(root):
    need(root, "sst2/test.tsv")
    examples = load_examples("sst2", "test", root=root)
    assert len(examples) == 1821
    assert all(e.label is None and e.words for e in examples)


# --------------------------------------------------------------------------- e-SNLI


def test_esnli_dev_highlighted(root):
    need(root, "esnli/s1.dev", "esnli/highlights")
    examples = load_examples("esnli", "dev_highlighted", root=root)
    assert len(examples) == 6395
    assert Counter(e.gold_name for e in examples) == {"entailment": 3117, "contradiction": 3278}
    assert all(e.rationale is not None and e.rationales == (e.rationale,) for e in examples)
    check_masks(examples)
    # the words are those of s1.dev / s2.dev, not the highlight files' tokenization
    premises = (root / "esnli" / "s1.dev").read_text(encoding="utf-8").split("\n")
    hypotheses = (root / "esnli" / "s2.dev").read_text(encoding="utf-8").split("\n")
    for e in examples:
        index = int(e.id.rsplit("/", 1)[1])
        assert e.segments == (tuple(premises[index].split()), tuple(hypotheses[index].split()))
    # 13 blocks of the highlight files mark no word at all; every other pair has a marked word
    assert sum(1 for e in examples if not any(e.rationale)) == 13
    by_id = {e.id: e for e in examples}

    def marked(index: int) -> list[str]:
        e = by_id[f"esnli/dev/{index}"]
        return [w for w, m in zip(e.words, e.rationale) if m]

    # "garage - like" in the highlight file, "garage-like" in s1.dev (the word is not marked)
    assert marked(13) == ["in", "a", "blue", "shirt", "wearing", "a", "blue", "shirt"]
    assert marked(14) == ["blue", "black"]
    # highlighted bare spaces mark nothing
    assert marked(5781) == ["cooks", "shellfish"]


def test_esnli_dev_and_test(root):
    need(root, "esnli/s1.dev", "esnli/s1.test")
    dev = load_examples("esnli", "dev", root=root)
    assert len(dev) == 9842
    assert sum(e.rationale is not None for e in dev) == 6395
    assert all(e.is_pair and e.label is not None for e in dev)
    assert len(load_examples("esnli", "test", root=root)) == 9824


# --------------------------------------------------------------------------- ERASER movies


def test_movies_test(root):
    need(root, "movies/test")
    examples = load_examples("movies", "test", root=root)
    assert len(examples) == 2727
    with_mask = [e for e in examples if e.rationale is not None]
    assert len(with_mask) == 2727  # every sentence's evidence text is found in it
    check_masks(examples)
    assert set(Counter(e.label for e in examples)) == {0, 1}
    from datasets import load_from_disk

    rows = load_from_disk(str(root / "movies" / "test"))
    for e, row in zip(examples[:200], rows):
        picked = tuple(w for w, m in zip(e.words, e.rationale) if m)
        assert picked == tuple(row["evidence"]["text"].split())


def test_movie_reviews_hold_each_sentence_once_with_all_its_spans(root):
    need(root, "movies/validation")
    from datasets import load_from_disk

    reviews = {e.id.rsplit("/", 1)[1]: e for e in load_examples("movie-reviews", "validation", root=root)}
    assert len(reviews) == 200
    rows = load_from_disk(str(root / "movies" / "validation"))
    for row in rows:  # every row's sentences are in its review, its span marked there
        words, span = reviews[row["evidence"]["docid"]].words, row["evidence"]["text"].split()
        marked = [i for i in range(len(words) - len(span) + 1) if words[i : i + len(span)] == tuple(span)]
        assert any(all(reviews[row["evidence"]["docid"]].rationale[i : i + len(span)]) for i in marked)
    # One sentence of this review has two spans (two rows), and two rows of negR_883 overlap by
    # a sentence: each sentence is there once, every span marked.
    text = " ".join(reviews["negR_802.txt"].words)
    assert text.count("thumbs up to fichtner") == 1
    doubled = reviews["negR_883.txt"]
    assert " ".join(doubled.words).count("i even felt my iq dip") == 1
    assert " ".join(w for w, m in zip(doubled.words, doubled.rationale) if m).count("ugh . what a pile of dung") == 1


# --------------------------------------------------------------------------- HateXplain


def test_hatexplain_test(root):
    need(root, "hatexplain/test.csv")
    examples = load_examples("hatexplain", "test", root=root)
    assert len(examples) == 1924
    check_masks(examples)
    counts = Counter(e.gold_name for e in examples)
    assert counts["normal"] == 782
    # posts judged normal carry no rationale; every other post has two or three
    for e in examples:
        if e.gold_name == "normal":
            assert e.rationales == () and e.rationale is None
        else:
            assert len(e.rationales) in (2, 3) and e.rationale is not None
            assert e.rationale == majority_mask(e.rationales)
    assert sum(e.rationale is not None for e in examples) == 1142


def test_hatexplain_val(root):
    need(root, "hatexplain/val.csv")
    examples = load_examples("hatexplain", "val", root=root)
    assert len(examples) == 1922
    assert examples[0].label_names == HATEXPLAIN_LABELS


# --------------------------------------------------------------------------- MultiRC


def test_multirc_dev(root):
    need(root, "multirc/dev.json")
    examples = load_examples("multirc", "dev", root=root)
    assert len(examples) == 4848
    check_masks(examples)
    assert all(e.is_pair and any(e.rationale) for e in examples)
    # sentences_used is 0-based: question 0 of the first paragraph uses sentences 9 and 12
    first = examples[0]
    evidence = " ".join(w for w, m in zip(first.words, first.rationale) if m)
    assert "Deborah Russell" in evidence and "negative corner" in evidence
    assert "Christie Brinkley" not in evidence


def test_available_datasets(root):
    found = available_datasets(root)
    assert found["sst2"] == ["train", "dev", "test"]
    assert found["esnli"] == ["dev_highlighted", "dev", "test"]
    assert found["hatexplain"] == ["val", "test"]
    assert "movies" in found and "multirc" in found and "examples" in found


# --------------------------------------------------------------------------- without data


def test_errors_without_data(monkeypatch):
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    assert data_dir() is None
    assert available_splits("sst2") == []
    with pytest.raises(FileNotFoundError, match=DATA_DIR_ENV):
        load_examples("sst2", "dev")
    with pytest.raises(ValueError, match="unknown dataset"):
        load_examples("imdb", "dev")
    assert set(DATASET_NAMES) == {"sst2", "esnli", "movies", "movie-reviews", "hatexplain", "multirc", "examples"}


def test_unknown_split(tmp_path):
    with pytest.raises(ValueError, match="unknown split"):
        load_examples("sst2", "validation", root=tmp_path)
    with pytest.raises(FileNotFoundError, match="sst2/dev"):
        load_examples("sst2", "dev", root=tmp_path)


# --------------------------------------------------------------------------- parsing helpers


def test_parse_esnli_highlights_escape_codes():
    text = (
        "\n----- Example 3 -----Two "
        f"{ESC_ON}young{ESC_OFF} {ESC_ON}kids{ESC_OFF} play . Kids {ESC_ON}play{ESC_OFF}\n"
        f"----- Example 10 -----\n{ESC_ON}A{ESC_OFF} man {ESC_ON} {ESC_OFF} runs{ESC_ON}.{ESC_OFF} "
        f"He {ESC_ON}sits down{ESC_OFF}\n"
        "----- Example 11 -----Nothing marked here\n"
    )
    parsed = parse_esnli_highlights(text)
    assert parsed[3] == (("Two", "young", "kids", "play", ".", "Kids", "play"), (0, 1, 1, 0, 0, 0, 1))
    # a highlight glued to the header, a highlighted blank (dropped), a highlight glued to a
    # word (marks it) and one spanning two words
    assert parsed[10] == (("A", "man", "runs.", "He", "sits", "down"), (1, 0, 1, 0, 1, 1))
    assert parsed[11] == (("Nothing", "marked", "here"), (0, 0, 0))


def test_align_mask():
    # identical word lists: the mask is kept
    assert align_mask(("x", "y"), (0, 1), ("x", "y")) == (0, 1)
    # split hyphens and other quote marks
    got = align_mask(
        ("A", "garage", "-", "like", "'", "HELP", "'", "."),
        (0, 1, 0, 0, 0, 1, 0, 0),
        ("A", "garage-like", "``", "HELP", "''", "."),
    )
    assert got == (0, 1, 0, 1, 0, 0)
    # characters that differ: the matching blocks still carry the mask
    assert align_mask(("the", "colour", "red"), (0, 0, 1), ("the", "color", "red")) == (0, 0, 1)


def test_span_mask():
    words = ("the", "film", "is", "not", "good", ",", "not", "good", "at", "all")
    assert span_mask(words, ("not", "good")) == (0, 0, 0, 1, 1, 0, 0, 0, 0, 0)
    assert span_mask(words, ("good", "at", "all")) == (0,) * 7 + (1, 1, 1)
    assert span_mask(words, ("bad",)) is None
    assert span_mask(words, ()) is None


def test_movie_example():
    row = {"id": 7, "sentence": "a truly great film . ", "label": 1, "evidence": {"text": "truly great"}}
    e = movie_example(row, "test", 0)
    assert e.id == "movies/test/7" and e.rationale == (0, 1, 1, 0, 0) and e.gold_name == "positive"
    e = movie_example({"sentence": "meh .", "label": 0, "evidence": None}, "test", 3)
    assert e.rationale is None and e.rationales == () and e.id == "movies/test/3"


def test_majority_mask():
    assert majority_mask([(1, 0, 1), (1, 1, 0), (0, 0, 1)]) == (1, 0, 1)
    assert majority_mask([(1, 0), (0, 0)]) == (1, 0)  # at least half
    assert majority_mask([]) == ()


def test_hatexplain_majority_and_empty_rationales():
    words = ["you", "are", "a", "clown"]
    e = hatexplain_example("p1", [2, 2, 1], [[0, 0, 0, 1], [0, 0, 1, 1]], words, "test")
    assert e.gold_name == "offensive" and len(e.rationales) == 2
    assert e.rationale == (0, 0, 1, 1)
    e = hatexplain_example("p2", [1, 1, 2], [], words, "test")
    assert e.gold_name == "normal" and e.rationales == () and e.rationale is None
    e = hatexplain_example("p3", [0, 2, 0], [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0]], words, "test")
    assert e.gold_name == "hatespeech" and e.rationale == (1, 1, 0, 0)
    # a mask of the wrong length is dropped rather than breaking the example
    e = hatexplain_example("p4", [2, 2, 2], [[1, 0]], words, "test")
    assert e.rationales == () and e.rationale is None


def test_split_words():
    assert split_words("It's <b>great</b>, isn't it?") == (
        "It's", "<", "b", ">", "great", "<", "/", "b", ">", ",", "isn't", "it", "?",
    )  # fmt: skip


def test_split_words_makes_each_cjk_ideograph_a_word_as_berts_tokenizer_does():
    """Chinese text, written without spaces, was one word: one heatmap cell for a whole sentence."""
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer

    text = "我爱北京天安门。𠀀豈 and 東京"
    spaced = BertNormalizer(handle_chinese_chars=True, strip_accents=False, lowercase=False).normalize_str(text)
    assert split_words(text) == tuple(word for word, _ in BertPreTokenizer().pre_tokenize_str(spaced))
    assert split_words("naïve x² 東京's") == ("naïve", "x²", "東", "京", "'", "s")


def test_split_words_keeps_combining_marks_and_emoji_sequences_in_their_word():
    """Hindi fell apart into vowel signs and viramas (\\w has no combining marks), and an emoji
    family into three faces and two invisible joiners, each a heatmap cell with a score."""
    assert split_words("फ़िल्म अच्छी थी") == ("फ़िल्म", "अच्छी", "थी")
    assert split_words("e\u0301te\u0301 👨\u200d👩\u200d👧 👍🏽 🇫🇷!") == (
        "e\u0301te\u0301", "👨\u200d👩\u200d👧", "👍🏽", "🇫🇷", "!",
    )  # fmt: skip
    assert split_words("क्\u200dष") == ("क्\u200dष",)  # a joiner inside a word (Indic half forms) stays in it
    # an invisible format character alone is no word (BERT drops it: a word with no token)
    assert split_words("good\u200bfilm \u200b ok \ufeff fine \u2060 !") == ("good", "film", "ok", "fine", "!")


# --------------------------------------------------------------------------- hub converters


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_hub_sst2_parquet(tmp_path):
    import pandas as pd

    path = tmp_path / "validation-00000-of-00001.parquet"
    pd.DataFrame(
        {"sentence": ["it 's a charming journey . ", "a dull , lifeless mess "], "label": [1, 0], "idx": [10, 11]}
    ).to_parquet(path)
    examples = hub.load_hub_examples("sst2", "dev", data_files=str(path), cache_dir=str(tmp_path / "cache"))
    assert [e.id for e in examples] == ["sst2/validation/10", "sst2/validation/11"]
    assert examples[0].words == ("it", "'s", "a", "charming", "journey", ".")
    assert [e.gold_name for e in examples] == ["positive", "negative"]
    unlabelled = hub.sst2_row_to_example({"sentence": "fine", "label": -1, "idx": 0}, "test")
    assert unlabelled.label is None


def test_hub_movie_rationales_json(tmp_path):
    rows = [
        {
            "review": "the acting is superb .\nbut the plot is a mess and the ending drags .\n",
            "label": 0,
            "evidences": ["the plot is a mess", "ending drags"],
        },
        {"review": "fun movie\n", "label": 1, "evidences": ["Fun movie"]},  # case differs
        {"review": "no evidence here", "label": 1, "evidences": []},
    ]
    path = write_jsonl(tmp_path / "test.jsonl", rows)
    examples = hub.load_hub_examples("movies", "test", data_files=str(path), cache_dir=str(tmp_path / "cache"))
    first = examples[0]
    assert [w for w, m in zip(first.words, first.rationale) if m] == [
        "the", "plot", "is", "a", "mess", "ending", "drags",
    ]  # fmt: skip
    assert first.rationales == (first.rationale,) and first.gold_name == "negative"
    assert examples[1].rationale == (1, 1)
    assert examples[2].rationale is None and examples[2].rationales == ()
    mask, missing = hub.evidence_mask(("a", "b"), ["c", "a"])
    assert mask == (1, 0) and missing == 1
    # a span that starts inside a word still marks the words it touches
    assert hub.text_span_mask(("watch", "it", "now"), "ch it") == (1, 1, 0)


def test_hub_hatexplain_json(tmp_path):
    rows = [
        {
            "id": "1_gab",
            "annotators": {"label": [2, 2, 1], "annotator_id": [4, 5, 6], "target": [["None"], ["None"], ["None"]]},
            "rationales": [[0, 1, 1], [0, 0, 1]],
            "post_tokens": ["what", "stupid", "clowns"],
        },
        {
            "id": "2_twitter",
            "annotators": {"label": [1, 1, 1], "annotator_id": [1, 2, 3], "target": [["None"], ["None"], ["None"]]},
            "rationales": [],
            "post_tokens": ["lovely", "day"],
        },
    ]
    path = write_jsonl(tmp_path / "validation.jsonl", rows)
    examples = hub.load_hub_examples("hatexplain", "val", data_files=str(path), cache_dir=str(tmp_path / "cache"))
    assert [e.id for e in examples] == ["hatexplain/validation/1_gab", "hatexplain/validation/2_twitter"]
    assert examples[0].gold_name == "offensive" and examples[0].rationale == (0, 1, 1)
    assert examples[1].gold_name == "normal" and examples[1].rationales == () and examples[1].rationale is None
    # the list-of-dicts form and label names work too
    listed = dict(rows[0], annotators=[{"label": "hatespeech"}, {"label": "offensive"}, {"label": "hatespeech"}])
    assert hub.hatexplain_row_to_example(listed, "train").gold_name == "hatespeech"


ESNLI_HEADER = [
    "pairID", "gold_label", "Sentence1", "Sentence2",
    *[c for k in (1, 2, 3) for c in (f"Explanation_{k}", f"Sentence1_marked_{k}", f"Sentence2_marked_{k}",
                                      f"Sentence1_Highlighted_{k}", f"Sentence2_Highlighted_{k}")]
]  # fmt: skip


def test_hub_esnli_csv(tmp_path):
    premise = "Two women are embracing while holding to go packages."
    hypothesis = "The sisters are hugging goodbye while holding to go packages after just eating lunch."
    row1 = [
        "4705552913.jpg#2r1n", "neutral", premise, hypothesis,
        "Not all women are sisters.", premise, "The *sisters* are hugging goodbye while holding to go packages after just eating lunch.", "{}", "1",
        "Embracing is not always goodbye.", premise, "The sisters are *hugging* *goodbye* while holding to go packages after just eating lunch.", "{}", "3,4",
        "They may not be sisters.", premise, "The *sisters* are hugging *goodbye* while holding to go packages after just eating lunch.", "{}", "1,4",
    ]  # fmt: skip
    row2 = [
        "1r1c", "contradiction ", "A man is sleeping.", "The man runs fast.",
        "Sleeping is not running.", "A man is *sleeping.*", "The man *runs* fast.", "3", "2",
        "One cannot sleep and run.", "A man is *sleeping.*", "The man *runs* *fast.*", "3", "2,3",
        "Asleep, not running.", "A *man* is *sleeping.*", "The man *runs* fast.", "1,3", "2",
    ]  # fmt: skip
    path = tmp_path / "esnli_dev.csv"
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(ESNLI_HEADER)
        writer.writerow(row1)
        writer.writerow(row2)
    examples = hub.load_hub_examples("esnli", "dev", data_files=str(path), cache_dir=str(tmp_path / "cache"))
    first, second = examples
    assert first.id == "esnli/validation/4705552913.jpg#2r1n" and first.gold_name == "neutral"
    assert first.segments == (tuple(premise.split()), tuple(hypothesis.split()))
    assert len(first.rationales) == 3
    n_premise = len(first.segments[0])
    assert all(not any(mask[:n_premise]) for mask in first.rationales)  # neutral: premise unmarked
    hyp = first.segments[1]
    majority = [hyp[i - n_premise] for i, m in enumerate(first.rationale) if m]
    assert majority == ["sisters", "goodbye"]  # marked by 2 of 3
    assert second.gold_name == "contradiction"
    assert [w for w, m in zip(second.words, second.rationale) if m] == ["sleeping.", "runs"]
    assert [w for w, m in zip(second.words, second.rationales[2]) if m] == ["man", "sleeping.", "runs"]


def test_hub_esnli_train_format(tmp_path):
    # the train files have a WorkerId and one annotator; highlights from asterisks when the
    # index column is unusable
    row = {
        "pairID": "9r1e", "gold_label": "entailment", "WorkerId": "W1",
        "Sentence1": "A dog runs on the beach.", "Sentence2": "An animal is outside.",
        "Explanation_1": "A dog is an animal.",
        "Sentence1_marked_1": "A *dog* runs on the *beach.*", "Sentence2_marked_1": "An *animal* is *outside.*",
        "Sentence1_Highlighted_1": "not indices", "Sentence2_Highlighted_1": None,
    }  # fmt: skip
    e = hub.esnli_csv_row_to_example(row, "train", 0)
    assert len(e.rationales) == 1 and e.rationale == e.rationales[0]
    assert [w for w, m in zip(e.words, e.rationale) if m] == ["dog", "beach.", "animal", "outside."]
    assert hub.parse_highlight_indices("{}") == set()
    assert hub.parse_highlight_indices("") is None
    assert hub.parse_highlight_indices("2, 5") == {2, 5}
    assert hub.asterisk_mask(["*hugging", "goodbye*", "now"]) == (1, 1, 0)


def test_load_hub_examples_reports_every_attempt(monkeypatch):
    import datasets

    calls = []

    def offline(path, name=None, **kwargs):
        calls.append((path, name, kwargs.get("revision")))
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(ValueError, match="could not load hatexplain/test") as info:
        hub.load_hub_examples("hatexplain", "test", limit=5)
    assert len(calls) == 3 and "no network" in str(info.value)
    calls.clear()
    with pytest.raises(ValueError):
        hub.load_hub_examples("esnli", "dev")
    assert calls[0][0] == "csv"
    with pytest.raises(ValueError, match="unknown split"):
        hub.load_hub_examples("sst2", "nonsense")
    with pytest.raises(ValueError, match="unknown hub dataset"):
        hub.load_hub_examples("multirc", "dev")


def test_hub_datasets_are_reachable_by_name_where_a_local_one_is(monkeypatch):
    """``hub:NAME`` goes through ``load_examples`` (so the CLI's --dataset and the sidebar take
    it) and is listed only when the hub is online."""
    import datasets

    from core.datasets import available_datasets, load_examples

    rows = [{"sentence": "a fine film", "label": 1, "idx": 0}, {"sentence": "dull", "label": 0, "idx": 1}]
    seen = []

    def fake_hub(path, name=None, split=None, **kwargs):
        seen.append((path, name, split))
        return rows

    monkeypatch.setattr(datasets, "load_dataset", fake_hub)
    examples = load_examples("hub:sst2", "dev", limit=2)
    assert [e.words for e in examples] == [("a", "fine", "film"), ("dull",)]
    assert [e.label for e in examples] == [1, 0]
    assert seen[0][2] == "validation[:2]"
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    assert available_datasets()["hub:sst2"] == ["train", "validation", "test"]
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert not any(name.startswith("hub:") for name in available_datasets())
    with pytest.raises(ValueError, match="unknown hub dataset"):
        load_examples("hub:nonsense", "dev")


# --------------------------------------------------------------------------- bundled examples

TASK_LABELS = {
    "sst2": ("negative", "positive"),
    "movies": ("negative", "positive"),
    "esnli": ESNLI_LABELS,
    "hatexplain": HATEXPLAIN_LABELS,
}


def test_bundled_examples():
    examples = load_bundled_examples()
    assert len(examples) == 36
    assert Counter(e.split for e in examples) == {"sst2": 12, "esnli": 10, "movies": 8, "hatexplain": 6}
    for e in examples:
        assert e.label_names == TASK_LABELS[e.split], e.id
        assert e.label is not None and 0 <= e.label < len(e.label_names), e.id
        assert e.rationale is not None and any(e.rationale), e.id
        assert len(e.rationale) == len(e.words)
        assert e.is_pair == (e.split == "esnli"), e.id
        if e.split == "sst2":
            assert 15 <= len(e.text.split()) <= 25, e.id
    # every highlighted word of the file is a word of its example
    lines = EXAMPLES_FILE.read_text(encoding="utf-8").splitlines()
    for e, line in zip(examples, lines):
        words = {w.lower() for w in e.words}
        for phrase in json.loads(line)["highlight"]:
            assert all(w.lower() in words for w in split_words(phrase)), (e.id, phrase)
    assert len(load_examples("examples", "esnli")) == 10
    assert available_splits("examples") == ["all", "esnli", "hatexplain", "movies", "sst2"]


# --------------------------------------------------------------------------- datasets.Dataset end to end

SPLITS = [("sst2", "dev"), ("esnli", "dev_highlighted"), ("movies", "test"), ("hatexplain", "test"),
          ("multirc", "dev"), ("examples", "all")]  # fmt: skip


@pytest.mark.parametrize(("name", "split"), SPLITS)
def test_a_split_loads_as_a_dataset_whose_rows_are_the_parsed_examples(root, name, split):
    """Loading goes through one ``datasets.Dataset`` per split; the ``Example``s built from its rows
    are exactly the ones parsed from the files (tuples, None where there is no label or mask)."""
    import datasets

    from core.datasets import _parse, load_dataset
    from core.example_dataset import example_at, features, to_examples

    parsed = _parse(name, split, root, None)
    loaded = load_dataset(name, split, root=root)
    assert isinstance(loaded, datasets.Dataset) and loaded.features == features()
    assert loaded.num_rows == len(parsed)
    assert to_examples(loaded) == parsed
    assert load_examples(name, split, root=root) == parsed
    for index in (0, len(parsed) // 2, len(parsed) - 1):
        assert example_at(loaded, index) == parsed[index]
    first = to_examples(loaded.select([0]))[0]
    assert isinstance(first.segments, tuple) and all(isinstance(s, tuple) for s in first.segments)
    assert isinstance(first.label_names, tuple) and isinstance(first.rationales, tuple)
    assert load_dataset(name, split, root=root, limit=2)["id"] == [e.id for e in parsed[:2]]


def test_examples_without_label_or_majority_mask_round_trip():
    from core.example_dataset import to_dataset, to_examples

    examples = [
        Example(segments=(("a", "b"),), id="x/0"),
        Example(segments=(("a",), ("b", "c")), label=2, label_names=("p", "q", "r"), rationales=((1, 0, 1), (0, 0, 1)),
                rationale=(0, 0, 1), dataset="d", split="s", id="x/1"),
    ]  # fmt: skip
    loaded = to_dataset(examples)
    assert loaded["label"] == [None, 2] and loaded["rationale"] == [None, [0, 0, 1]]
    assert to_examples(loaded) == examples


def test_the_apps_slices_are_rows_of_the_cached_dataset(root, monkeypatch):
    """services.data keeps the split as a Dataset; its examples, seeded slices and annotator count
    are those of the parsed list."""
    import services
    from engine.evaluate import select_examples

    monkeypatch.setenv(DATA_DIR_ENV, str(root))
    parsed = load_examples("hatexplain", "test", root=root)
    assert services.dataset_size("hatexplain", "test") == len(parsed)
    assert services.dataset_example("hatexplain", "test", 7) == parsed[7]
    assert services.slice_examples("hatexplain", "test", 4) == parsed[:4]
    drawn = services.slice_examples("hatexplain", "test", 5, random_order=True, seed=3)
    assert drawn == select_examples(parsed, 5, 3)
    assert services.annotator_count("hatexplain", "test") == max(len(e.rationales) for e in parsed)
    with pytest.raises(ValueError, match="outside hatexplain/test"):
        services.dataset_example("hatexplain", "test", len(parsed))
