"""The Reproductions page's parts: what each paper claims (our summary of the research notes), the
verdict badge of a finding, the list of a reproduction's stored results, and one reproduced table
with the published values beside ours.

Papers: Pham, Bui, Mai & Nguyen 2022 ("Double Trouble", arXiv 2110.11929); Madsen, Meade,
Adlakha & Reddy 2022 (Recursive ROAR, arXiv 2110.08412); Brinner & Zarrieß 2023 (MaRC); Barkan,
Toib, Elisha, Weill & Koenigstein 2024 (AML).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

import services
from ui.downloads import show_table
from ui.text import plain

if TYPE_CHECKING:
    from services.reproductions import StoredResult

# (words of the paper's title, what it claims), matched case-insensitively against the title
CLAIMS = (
    (
        "double trouble",
        (
            "Input Marginalization (IM) replaces a word with a masked language model's likely fill-ins instead of "
            "deleting it. The paper argues that IM only looks better than plain leave-one-out under Deletion_BERT, a "
            "metric that removes words with the same kind of masked LM, so the metric rewards the method that shares "
            "its trick: under ordinary deletion the ranking turns round. Across six metrics and three datasets IM is no "
            "better than leave-one-out with the word deleted (LOO_empty); IM gives near-zero scores to words the masked "
            "LM can guess back, whatever the classifier does with them; and making LIME's perturbed texts fluent "
            "(LIME_BERT) does not make LIME agree better with human highlights."
        ),
    ),
    (
        "recursively masking",
        (
            "ROAR removes the words a method ranks highest, retrains the model and checks that accuracy falls more than "
            "when random words are removed. When the data are redundant, the retrained model finds the same "
            "information elsewhere and ROAR calls a faithful method unfaithful. Recursive ROAR removes words a few at a "
            "time, re-explaining after each retraining, and summarises the curve by its area against random removal. "
            "The paper finds faithfulness depends on the model and the task: attention can be faithful, and integrated "
            "gradients are not reliably better than plain gradients."
        ),
    ),
    (
        "input mask optimization",
        (
            "MaRC learns a soft mask over the input's word embeddings, blended toward an uninformative baseline, that "
            "keeps the prediction with as few words as possible while the removed part alone loses it; the mask is "
            "built from Gaussian spans, so it selects short phrases. The paper claims these rationales agree better "
            "with human rationales (ERASER movie reviews: token F1, IoU F1, AUPRC) than gradient, attention and "
            "perturbation baselines, while staying faithful under comprehensiveness and sufficiency."
        ),
    ),
    (
        "attributive masking",
        (
            "AML trains a small attribution model that outputs a keep-probability per token: the input masked by it "
            "should keep the classifier's prediction and the input masked by its complement should lose it, with a "
            "sparsity term. It is pre-trained once over a dataset (pAML) and fine-tuned for a few steps on each "
            "example (fAML). The paper claims fAML beats every other attribution method it compares on log-odds, AOPC "
            "sufficiency and AOPC comprehensiveness, for BERT and for large language models."
        ),
    ),
)


# A difference that names the paper's method after ours: "LOO_zero is our loo_pad ([PAD] in place ...)".
# Table 1 now words it itself (and so do the packaged results); a result a user's run store kept
# from before still holds the old note, which ``worded`` rewords.
OUR_NAME = re.compile(r"(?P<paper>[A-Za-z_]+) is our (?P<ours>[a-z_]+)(?P<note> \(.*\))?")


def worded(reason: str, descriptions: dict[str, str]) -> str:
    """A difference as the page says it: "X is our y" becomes which of our methods the paper's X
    is, and where one of our methods carries the paper's name (the paper's LOO_zero, our
    loo_zero), that ours is another method, so the two names do not read as one."""
    found = OUR_NAME.fullmatch(reason)
    if found is None or found["ours"] not in descriptions:
        return reason
    paper, ours, namesake = found["paper"], found["ours"], found["paper"].lower()
    text = f"the paper's {paper}{found['note'] or ''} is the method called {ours} here ({descriptions[ours]})"
    if namesake != ours and namesake in descriptions:
        text += f"; not this app's {namesake}, another method ({descriptions[namesake]})"
    return text


def claim_of(title: str) -> str | None:
    """Our paragraph on what the paper titled ``title`` claims (None for a paper not summarised)."""
    lowered = title.lower()
    return next((text for words, text in CLAIMS if words in lowered), None)


def verdict(payload: dict[str, Any] | None) -> str:
    """A coloured badge: holds, does not hold, undecided (neutral: the paired intervals contain 0),
    or not run."""
    if payload is None:
        return ":gray-badge[not run]"
    holds = payload["finding"]["holds"]
    return (
        ":blue-badge[undecided]" if holds is None else ":green-badge[holds]" if holds else ":red-badge[does not hold]"
    )


def finding_word(holds: bool | None) -> str:
    """A finding as a word: holds, does not hold, undecided."""
    return "undecided" if holds is None else "holds" if holds else "does not hold"


def headline(holds: Sequence[bool | None], total: int, packaged: int) -> str:
    """The page's count: how many of ``total`` findings hold, do not, are undecided, not run."""
    held, failed = sum(h is True for h in holds), sum(h is False for h in holds)
    text = (
        f"**{held} of {total}** findings hold here, {failed} {'does' if failed == 1 else 'do'} not, "
        f"{len(holds) - held - failed} undecided, {total - len(holds)} not run yet"
    )
    were = "was" if packaged == 1 else "were"
    return text + (f" ({packaged} of the results {were} computed when the app was packaged)." if packaged else ".")


def rows_frame(payload: dict[str, Any]) -> pd.DataFrame:
    """One line per published cell: the published value, ours (mean, 95% interval) and n."""
    return pd.DataFrame(
        [
            {
                "row": row["label"],
                "published": row["published"],
                "ours": row["mean"],
                "95% low": row["low"],
                "95% high": row["high"],
                "n": row["n"],
            }
            for row in payload["rows"]
        ]
    )


def stored_frame(results: Sequence[StoredResult], version: str) -> pd.DataFrame:
    """One line per stored result, newest first: when it finished (UTC), the code version (marked
    when it is the current one), the slice, the most examples a row was scored on, the verdict and
    the run time."""
    return pd.DataFrame(
        [
            {
                "finished (UTC)": f"{result.computed:%Y-%m-%d %H:%M}",
                "code": result.code + (" (current)" if result.code == version else ""),
                "examples per split": result.limit,
                "n": result.n,
                "finding": finding_word(result.holds),
                "run time (s)": result.runtime_s,
                "run": result.run_id,
            }
            for result in results
        ]
    )


def not_run(command: str) -> None:
    """What a reproduction that never ran shows: the command that computes it."""
    st.markdown("No stored result yet. On the command line:")
    st.code(command, language="bash")


def show_stored(results: Sequence[StoredResult], version: str, name: str) -> None:
    """The stored results of one reproduction (every slice and code version), in an expander;
    nothing when there are none."""
    if results:
        with st.expander(f"Stored results ({len(results)})"):
            show_table(stored_frame(results, version), key=f"reproductions.{name}.stored", name=f"reproductions-{name}",
                       hide_index=True, column_config={"run time (s)": st.column_config.NumberColumn(format="%.1f")})  # fmt: skip


def printed_decimals(payload: dict[str, Any]) -> int:
    """The most decimals the paper printed in this table (read from its values, at most 4; 3
    where it printed none): the published values, ours and our interval are all shown with them,
    so that a column never mixes 0.497 with 0.4374."""
    printed = [
        len(repr(float(row["published"])).partition(".")[2]) for row in payload["rows"] if row["published"] is not None
    ]
    return min(max(printed), 4) if printed else 3


def show_result(payload: dict[str, Any], current: bool, command: str, changed: Sequence[str] = ()) -> None:
    """The table, the finding with its reason, the command and why our numbers may differ;
    ``changed``: the models whose weights here differ from those it was computed with."""
    number = st.column_config.NumberColumn(format=f"%.{printed_decimals(payload)}f")
    config = {name: number for name in ("published", "ours", "95% low", "95% high")}
    name = f"reproduction-{payload['name']}-limit{payload['limit']}"
    show_table(rows_frame(payload), key=f"reproductions.{payload['name']}.table", name=name, hide_index=True,
               column_config=config)  # fmt: skip
    st.caption(f"Published: {plain(payload['published_note'])}. “—” = not printed for this row.")
    finding = payload["finding"]
    st.markdown(f"{verdict(payload)} {plain(finding['reason'])}")
    version = plain(str(payload["code_version"]))
    if changed:
        models = ", ".join(plain(name) for name in changed)
        stale = f" with other weights of {models} than this machine's: run it again to update"
    else:
        stale = "" if current else f" by an earlier version of the code ({version}): run it again to update"
    origin = "**Precomputed, bundled with the app**: " if payload.get("bundled") else ""
    st.markdown(
        f"{origin}{payload['limit']} examples per split, {plain(str(payload['runtime_s']))} s, finished "
        f"{plain(str(payload['computed']))} UTC{stale}. The same numbers on the command line:"
    )
    st.code(command, language="bash")
    with st.expander("Why ours may differ, and the settings"):
        descriptions = {m.key: m.description for m in services.methods()}
        st.markdown("\n".join(f"- {plain(worded(reason, descriptions))}" for reason in payload["differences"]))
        st.json(payload["settings"])
