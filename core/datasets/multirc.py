"""MultiRC (Khashabi et al. 2018) in ERASER's form (DeYoung et al. 2020): one example per answer
option, the paragraph against question and answer, the evidence sentences as the rationale."""

from __future__ import annotations

import json
import re
from pathlib import Path

from core.datasets.common import split_words
from core.types import Example

MULTIRC_LABELS = ("false", "true")

_SENT_RE = re.compile(r"<b>Sent \d+: </b>")


def load_multirc(root: Path, split: str) -> list[Example]:
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
