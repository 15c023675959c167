"""Dataset loaders behind one interface: ``load_dataset(name, split)`` returns a ``datasets.Dataset``
(one row per example, ``core.example_dataset``) and ``load_examples`` the ``Example``s of its rows.

Local files are read from the folder in ``ATTRIBUTION_DATA_DIR`` (formats in that folder's
README): SST-2 TSV, e-SNLI line files with the human highlight files, ERASER movie reviews
(``datasets.load_from_disk``), HateXplain CSV and MultiRC JSON. ``examples`` is the project's
own hand-written set under ``assets/examples``. Hub versions for online users live in
``core.hub_datasets`` behind the same ``Example`` type.
"""

from __future__ import annotations

import ast
import csv
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from core.types import Example

if TYPE_CHECKING:
    from datasets import Dataset

DATA_DIR_ENV = "ATTRIBUTION_DATA_DIR"
EXAMPLES_FILE = Path(__file__).resolve().parent.parent / "assets" / "examples" / "examples.jsonl"

SST2_LABELS = ("negative", "positive")
ESNLI_LABELS = ("entailment", "neutral", "contradiction")
MOVIES_LABELS = ("negative", "positive")
HATEXPLAIN_LABELS = ("hatespeech", "normal", "offensive")
MULTIRC_LABELS = ("false", "true")

_WORD_RE = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")
_HIGHLIGHT_RE = re.compile(r"\x1b\[0;30;43m(.*?)\x1b\[0m")


def split_words(text: str) -> tuple[str, ...]:
    """Split free text into words and punctuation marks (the app's tokenizer for typed text)."""
    return tuple(_WORD_RE.findall(text))


def data_dir(explicit: str | os.PathLike | None = None) -> Path | None:
    """The data folder: the explicit argument, else ``$ATTRIBUTION_DATA_DIR``, else None."""
    chosen = explicit if explicit is not None else os.environ.get(DATA_DIR_ENV)
    if not chosen:
        return None
    path = Path(chosen).expanduser()
    return path if path.is_dir() else None


def majority_mask(masks: Iterable[Iterable[int]]) -> tuple[int, ...]:
    """Words marked by at least half of the annotators who gave a mask."""
    masks = [tuple(m) for m in masks]
    if not masks:
        return ()
    return tuple(int(2 * sum(col) >= len(masks)) for col in zip(*masks))


# --------------------------------------------------------------------------- SST-2


def _load_sst2(root: Path, split: str) -> list[Example]:
    path = root / "sst2" / f"{split}.tsv"
    examples = []
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader)
        labelled = header[-1] == "label"
        for i, row in enumerate(reader):
            sentence = row[0] if labelled else row[1]
            label = int(row[1]) if labelled else None
            examples.append(
                Example(
                    segments=(tuple(sentence.split()),),
                    label=label,
                    label_names=SST2_LABELS,
                    dataset="sst2",
                    split=split,
                    id=f"sst2/{split}/{i}",
                )
            )
    return examples


# --------------------------------------------------------------------------- e-SNLI


def parse_esnli_highlights(text: str) -> dict[int, tuple[tuple[str, ...], tuple[int, ...]]]:
    """Parse a highlights file: ``{dev index: (words, 0/1 mask)}``.

    Each block is ``----- Example N -----`` followed (on the same line or the next) by premise and
    hypothesis words on one line, a highlighted word wrapped in the escape codes ``ESC[0;30;43m``
    ... ``ESC[0m``. Parsing is per character, so a highlight glued to other text or one spanning
    several words still marks the right words; a highlighted stretch of bare spaces (the files
    have a few, where the original text had double spaces) marks nothing.
    """
    parsed: dict[int, tuple[tuple[str, ...], tuple[int, ...]]] = {}
    parts = re.split(r"-{5} Example (\d+) -{5}", text)
    for index_text, body in zip(parts[1::2], parts[2::2]):
        parsed[int(index_text)] = _highlighted_words(body.strip())
    return parsed


def _highlighted_words(line: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Words of a line with ``ESC[0;30;43m``...``ESC[0m`` highlights, and which are highlighted."""
    chars: list[str] = []
    flags: list[bool] = []
    position = 0
    for match in _HIGHLIGHT_RE.finditer(line):
        plain = line[position : match.start()]
        chars.extend(plain)
        flags.extend([False] * len(plain))
        chars.extend(match.group(1))
        flags.extend([True] * len(match.group(1)))
        position = match.end()
    chars.extend(line[position:])
    flags.extend([False] * (len(line) - position))
    words: list[str] = []
    mask: list[int] = []
    for match in re.finditer(r"\S+", "".join(chars)):
        words.append(match.group(0))
        mask.append(int(any(flags[match.start() : match.end()])))
    return tuple(words), tuple(mask)


_QUOTES_RE = re.compile(r"``|''|[\"‘’“”]")


def _normalized_chars(words: Iterable[str]) -> tuple[str, list[int]]:
    """The words run together without spaces (quotes unified, lower-cased) and, per character,
    the index of the word it comes from."""
    chars: list[str] = []
    owner: list[int] = []
    for i, word in enumerate(words):
        norm = _QUOTES_RE.sub("'", word).lower()
        chars.extend(norm)
        owner.extend([i] * len(norm))
    return "".join(chars), owner


def align_mask(source_words: Iterable[str], source_mask: Iterable[int], target_words: Iterable[str]) -> tuple[int, ...]:
    """Carry a word mask over to another tokenization of the same text.

    The two word lists are matched character by character, ignoring spaces, case and quote
    styles (the e-SNLI highlight files split "garage-like" into "garage - like" and write both
    two-character quotes as one apostrophe); a target word is marked when any of its characters
    comes from a marked source word. Where the characters differ beyond that, the longest
    matching blocks are used.
    """
    source_words, source_mask, target_words = tuple(source_words), tuple(source_mask), tuple(target_words)
    if source_words == target_words:
        return tuple(int(bool(m)) for m in source_mask)
    source_text, source_owner = _normalized_chars(source_words)
    target_text, target_owner = _normalized_chars(target_words)
    marked = [0] * len(target_words)
    if source_text == target_text:
        pairs: Iterable[tuple[int, int]] = zip(range(len(source_text)), range(len(target_text)))
    else:
        import difflib

        matcher = difflib.SequenceMatcher(None, source_text, target_text, autojunk=False)
        pairs = ((a + k, b + k) for a, b, size in matcher.get_matching_blocks() for k in range(size))
    for s, t in pairs:
        if source_mask[source_owner[s]]:
            marked[target_owner[t]] = 1
    return tuple(marked)


def _read_lines(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle]


def _load_esnli(root: Path, split: str) -> list[Example]:
    """e-SNLI premise/hypothesis pairs; ``dev_highlighted`` keeps the dev pairs with highlights.

    Words are those of ``s1``/``s2`` (space-tokenized). The highlight files tokenize a little
    differently (hyphens split off, other quote marks), so their masks are carried over with
    ``align_mask``; every highlighted pair gets a mask (words marked by at least 2 of 3 annotators).
    """
    base_split = "dev" if split == "dev_highlighted" else split
    folder = root / "esnli"
    premises = _read_lines(folder / f"s1.{base_split}")
    hypotheses = _read_lines(folder / f"s2.{base_split}")
    labels = _read_lines(folder / f"labels.{base_split}")
    if not len(premises) == len(hypotheses) == len(labels):
        raise ValueError(
            f"e-SNLI {base_split}: {len(premises)} premises, {len(hypotheses)} hypotheses, {len(labels)} labels"
        )
    highlights: dict[int, tuple[tuple[str, ...], tuple[int, ...]]] = {}
    if base_split == "dev" and (folder / "highlights").is_dir():
        for file in sorted((folder / "highlights").glob("*.txt")):
            highlights.update(parse_esnli_highlights(file.read_text(encoding="utf-8")))
    examples = []
    for i, (premise, hypothesis, label) in enumerate(zip(premises, hypotheses, labels)):
        if split == "dev_highlighted" and i not in highlights:
            continue
        label = label.strip().lower()
        if label not in ESNLI_LABELS:
            continue
        segments = (tuple(premise.split()), tuple(hypothesis.split()))
        rationale = None
        if i in highlights:
            words, mask = highlights[i]
            rationale = align_mask(words, mask, segments[0] + segments[1])
        examples.append(
            Example(
                segments=segments,
                label=ESNLI_LABELS.index(label),
                label_names=ESNLI_LABELS,
                rationales=(rationale,) if rationale is not None else (),
                rationale=rationale,
                dataset="esnli",
                split=split,
                id=f"esnli/{base_split}/{i}",
            )
        )
    return examples


# --------------------------------------------------------------------------- ERASER movies


def span_mask(words: tuple[str, ...], span_words: tuple[str, ...]) -> tuple[int, ...] | None:
    """0/1 mask of the first occurrence of ``span_words`` inside ``words`` (None if absent)."""
    n = len(span_words)
    if n == 0:
        return None
    for start in range(len(words) - n + 1):
        if words[start : start + n] == span_words:
            return tuple(int(start <= i < start + n) for i in range(len(words)))
    return None


def movie_example(row: dict, split: str, index: int, dataset: str = "movies") -> Example:
    words = tuple(row["sentence"].split())
    evidence = row.get("evidence") or {}
    mask = span_mask(words, tuple((evidence.get("text") or "").split()))
    return Example(
        segments=(words,),
        label=int(row["label"]),
        label_names=MOVIES_LABELS,
        rationales=(mask,) if mask else (),
        rationale=mask,
        dataset=dataset,
        split=split,
        id=f"{dataset}/{split}/{row.get('id', index)}",
    )


def _load_movies(root: Path, split: str) -> list[Example]:
    return [movie_example(row, split, i) for i, row in enumerate(_movie_rows(root, split))]


def _load_movie_reviews(root: Path, split: str) -> list[Example]:
    """ERASER movie reviews as documents: each review's sentences that the sentence-level data
    holds (those with a human evidence span), joined in their order in the review, with the spans
    as one rationale. Reviews run to several hundred words, longer than the model accepts, so this
    is the dataset for sliding windows (engine/windows.py). It is not the whole review: sentences
    without evidence are not in the data."""
    by_review: dict[str, list[tuple[int, Example]]] = {}
    for example, row in zip(_load_movies(root, split), _movie_rows(root, split), strict=True):
        evidence = row.get("evidence") or {}
        by_review.setdefault(evidence.get("docid") or example.id, []).append(
            (int(evidence.get("start_sentence") or 0), example)
        )
    reviews = []
    for docid, parts in by_review.items():
        sentences = [example for _, example in sorted(parts, key=lambda part: part[0])]
        words = tuple(w for e in sentences for w in e.words)
        mask = tuple(m for e in sentences for m in (e.rationale or (0,) * len(e.words)))
        reviews.append(
            Example(
                segments=(words,),
                label=sentences[0].label,
                label_names=MOVIES_LABELS,
                rationales=(mask,) if any(mask) else (),
                rationale=mask if any(mask) else None,
                dataset="movie-reviews",
                split=split,
                id=f"movie-reviews/{split}/{docid}",
            )
        )
    return reviews


def _movie_rows(root: Path, split: str):
    from datasets import load_from_disk

    return load_from_disk(str(root / "movies" / split))


# --------------------------------------------------------------------------- HateXplain


def hatexplain_example(
    post_id: str, labels: list[int], masks: list[list[int]], words: list[str], split: str, dataset: str = "hatexplain"
) -> Example:
    """Majority label of the annotators (a three-way tie, which the released splits do not have,
    goes to the first annotator's label); one mask per annotator who gave one (none for posts
    judged normal: then ``rationales`` is empty and ``rationale`` None)."""
    label = Counter(labels).most_common(1)[0][0]
    masks = tuple(tuple(int(v) for v in m) for m in masks if len(m) == len(words))
    return Example(
        segments=(tuple(words),),
        label=int(label),
        label_names=HATEXPLAIN_LABELS,
        rationales=masks,
        rationale=majority_mask(masks) if masks else None,
        dataset=dataset,
        split=split,
        id=f"{dataset}/{split}/{post_id}",
    )


def _load_hatexplain(root: Path, split: str) -> list[Example]:
    examples = []
    with open(root / "hatexplain" / f"{split}.csv", encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            annotators = ast.literal_eval(row["annotators"])
            examples.append(
                hatexplain_example(
                    row["id"],
                    list(annotators["label"]),
                    ast.literal_eval(row["rationales"]),
                    ast.literal_eval(row["post_tokens"]),
                    split,
                )
            )
    return examples


HATEXPLAIN_COMMUNITIES = ("African", "Islam", "Jewish", "Homosexual", "Women", "Refugee", "Arab")
# The seven target communities named by at least two of three annotators most often in the
# validation split (None, Other and the rarer ones left out); the multi-label demo's labels.


def hatexplain_annotations(
    split: str, root: str | os.PathLike | None = None
) -> list[tuple[Example, float, tuple[int, ...]]]:
    """HateXplain posts with the two annotations the regression and multi-label demos learn:
    the share of annotators who marked the post hate speech or offensive (0, 1/3, 2/3 or 1), and
    one 0/1 flag per ``HATEXPLAIN_COMMUNITIES`` entry named as a target by at least two of them."""
    folder = data_dir(root)
    if folder is None or not (folder / "hatexplain" / f"{split}.csv").exists():
        raise FileNotFoundError(f"hatexplain/{split}.csv not found: set {DATA_DIR_ENV} to the data folder")
    out = []
    with open(folder / "hatexplain" / f"{split}.csv", encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            annotators = ast.literal_eval(row["annotators"])
            labels = list(annotators["label"])
            example = hatexplain_example(
                row["id"], labels, ast.literal_eval(row["rationales"]), ast.literal_eval(row["post_tokens"]), split
            )
            share = sum(1 for label in labels if HATEXPLAIN_LABELS[label] != "normal") / len(labels)
            named = Counter(t for targets in annotators["target"] for t in set(targets))
            flags = tuple(int(named[c] >= 2) for c in HATEXPLAIN_COMMUNITIES)
            out.append((example, share, flags))
    return out


# --------------------------------------------------------------------------- MultiRC

_SENT_RE = re.compile(r"<b>Sent \d+: </b>")


def _load_multirc(root: Path, split: str) -> list[Example]:
    """One example per answer option: paragraph | question + answer; evidence sentences as mask."""
    data = json.loads((root / "multirc" / f"{split}.json").read_text(encoding="utf-8"))
    examples = []
    for paragraph in data["data"]:
        body = paragraph["paragraph"]
        sentences = [re.sub(r"<[^>]+>", " ", s) for s in _SENT_RE.split(body["text"])[1:]]
        sentence_words = [tuple(split_words(s)) for s in sentences]
        paragraph_words = tuple(w for s in sentence_words for w in s)
        sentence_of_word = [k for k, s in enumerate(sentence_words) for _ in s]
        for q_index, question in enumerate(body["questions"]):
            evidence = {int(k) for k in question.get("sentences_used", [])}  # 0-based
            question_words = split_words(re.sub(r"<[^>]+>", " ", question["question"]))
            for a_index, answer in enumerate(question["answers"]):
                answer_words = split_words(re.sub(r"<[^>]+>", " ", answer["text"]))
                second = tuple(question_words) + ("||",) + tuple(answer_words)
                mask = tuple(int(k in evidence) for k in sentence_of_word) + (0,) * len(second)
                examples.append(
                    Example(
                        segments=(paragraph_words, second),
                        label=int(bool(answer.get("isAnswer"))),
                        label_names=MULTIRC_LABELS,
                        rationales=(mask,),
                        rationale=mask,
                        dataset="multirc",
                        split=split,
                        id=f"multirc/{split}/{paragraph['id']}/{q_index}/{a_index}",
                    )
                )
    return examples


# --------------------------------------------------------------------------- bundled examples


def load_bundled_examples(path: Path = EXAMPLES_FILE, split: str = "all") -> list[Example]:
    """The team's hand-written examples (JSON Lines: task, text, text_b, label, highlight)."""
    examples = []
    with open(path, encoding="utf-8") as handle:
        for i, line in enumerate(handle):
            if not line.strip():
                continue
            record = json.loads(line)
            if split != "all" and record["task"] != split:
                continue
            segments = [split_words(record["text"])]
            if record.get("text_b"):
                segments.append(split_words(record["text_b"]))
            words = [w for s in segments for w in s]
            highlighted = {w.lower() for phrase in record.get("highlight", []) for w in split_words(phrase)}
            mask = tuple(int(w.lower() in highlighted) for w in words) if highlighted else None
            label_names = tuple(record["label_names"])
            examples.append(
                Example(
                    segments=tuple(segments),
                    label=label_names.index(record["label"]) if record.get("label") else None,
                    label_names=label_names,
                    rationales=(mask,) if mask else (),
                    rationale=mask,
                    dataset="examples",
                    split=record["task"],
                    id=f"examples/{record['task']}/{i}",
                )
            )
    return examples


# --------------------------------------------------------------------------- registry

_LOCAL: dict[str, tuple[Callable[[Path, str], list[Example]], dict[str, str]]] = {
    # name: (loader, {split: file or folder that must exist, relative to the data folder})
    "sst2": (_load_sst2, {"train": "sst2/train.tsv", "dev": "sst2/dev.tsv", "test": "sst2/test.tsv"}),
    "esnli": (_load_esnli, {"dev_highlighted": "esnli/highlights", "dev": "esnli/s1.dev", "test": "esnli/s1.test"}),
    "movies": (_load_movies, {s: f"movies/{s}" for s in ("train", "validation", "test")}),
    "movie-reviews": (_load_movie_reviews, {s: f"movies/{s}" for s in ("train", "validation", "test")}),
    "hatexplain": (_load_hatexplain, {"val": "hatexplain/val.csv", "test": "hatexplain/test.csv"}),
    "multirc": (_load_multirc, {"train": "multirc/train.json", "dev": "multirc/dev.json"}),
}
DATASET_NAMES = (*_LOCAL, "examples")
# Hub versions of the datasets (``core.hub_datasets``): ``hub:sst2``, ``hub:movies`` ... load with
# ``datasets.load_dataset`` and need the network (or the hub cache); offered when HF_HUB_OFFLINE is off.
HUB_PREFIX = "hub:"


def hub_online() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").strip().lower() not in ("1", "true", "yes", "on")


def available_splits(name: str, root: str | os.PathLike | None = None) -> list[str]:
    """Splits of ``name`` present in the data folder (bundled examples: one split per task)."""
    if name == "examples":
        return ["all", *sorted({e.split for e in load_bundled_examples()})]
    if name.startswith(HUB_PREFIX):
        from core.hub_datasets import HUB_SOURCES

        if name[len(HUB_PREFIX) :] not in HUB_SOURCES:
            raise ValueError(f"unknown hub dataset {name!r}; known: {', '.join(HUB_PREFIX + n for n in HUB_SOURCES)}")
        return list(HUB_SOURCES[name[len(HUB_PREFIX) :]].splits)
    folder = data_dir(root)
    if name not in _LOCAL:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASET_NAMES)}")
    if folder is None:
        return []
    return [split for split, rel in _LOCAL[name][1].items() if (folder / rel).exists()]


def available_datasets(root: str | os.PathLike | None = None) -> dict[str, list[str]]:
    """``{dataset: [splits]}`` for every dataset with at least one split present, then (online)
    the hub versions."""
    names = list(DATASET_NAMES)
    if hub_online():
        from core.hub_datasets import HUB_SOURCES

        names += [HUB_PREFIX + name for name in HUB_SOURCES]
    found = {name: available_splits(name, root) for name in names}
    return {name: splits for name, splits in found.items() if splits}


def load_dataset(name: str, split: str, root: str | os.PathLike | None = None, limit: int | None = None) -> Dataset:
    """Load a split of a dataset as a ``datasets.Dataset`` of examples (``core.example_dataset``
    columns; first ``limit`` rows when given); ``hub:NAME`` loads the hub version
    (``core.hub_datasets``)."""
    from core.example_dataset import to_dataset

    return to_dataset(_parse(name, split, root, limit))


def load_examples(
    name: str, split: str, root: str | os.PathLike | None = None, limit: int | None = None
) -> list[Example]:
    """The ``Example``s of ``load_dataset(name, split, root, limit)``, built from its rows."""
    from core.example_dataset import to_examples

    return to_examples(load_dataset(name, split, root, limit))


def _parse(name: str, split: str, root: str | os.PathLike | None, limit: int | None) -> list[Example]:
    """Each row of a split parsed from its source (local files, bundled examples or the hub)."""
    if name.startswith(HUB_PREFIX):
        from core.hub_datasets import load_hub_examples

        return load_hub_examples(name[len(HUB_PREFIX) :], split, limit=limit)
    if name == "examples":
        if split not in available_splits("examples"):
            raise ValueError(f"unknown split {split!r} of examples; known: {', '.join(available_splits('examples'))}")
        examples = load_bundled_examples(split=split)
    else:
        if name not in _LOCAL:
            raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASET_NAMES)}")
        folder = data_dir(root)
        if folder is None:
            raise FileNotFoundError(
                f"no data folder: set {DATA_DIR_ENV} to the folder holding {name}/ (e.g. ../shared/data)"
            )
        loader, splits = _LOCAL[name]
        if split not in splits:
            raise ValueError(f"unknown split {split!r} of {name}; known: {', '.join(splits)}")
        if not (folder / splits[split]).exists():
            raise FileNotFoundError(f"{name}/{split} not found under {folder}")
        examples = loader(folder, split)
    return examples[:limit] if limit is not None else examples
