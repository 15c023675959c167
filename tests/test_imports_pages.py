"""Imported attributions on the pages (issue 19 item 4: "see them on every page like our own
methods"). A CSV imported into a temporary run store for bundled SST-2 and e-SNLI examples is
offered on the heatmap, faithfulness and human-rationale pages, scored beside the built-in
methods with exactly the numbers ``engine.evaluate.evaluate_slice`` gives for the same scores,
labelled with its file and format; the example the import lacks is named, not dropped silently.
Our own method's scores exported as JSON and imported under another name score the same."""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import plotly.io
import pytest
from streamlit.testing.v1 import AppTest

from core.classifier import Classifier
from core.datasets import load_examples
from core.loaded import load_classifier
from core.types import Attribution
from engine.evaluate import evaluate_slice, metric_params
from engine.explain import explain_example
from engine.imports import import_bytes
from engine.runs.store import RunStore
from engine.slice_report import mean_curves, metric_summaries, plausibility_report
from tests.page_text import as_read, errors

APP = Path(__file__).resolve().parents[1] / "app.py"
CSV = "csv.mine (imported)"
ROUND_TRIP = "json.mine (imported)"
# The faithfulness page's default settings (ui.faithfulness.settings_form).
FAITHFULNESS = {
    "deletion": {"removal": "delete", "fraction": 0.2},
    "insertion": {"removal": "delete", "fraction": 0.2},
    "comprehensiveness": {"removal": "delete", "bins": "eraser"},
    "sufficiency": {"removal": "delete", "bins": "eraser"},
    "log_odds": {},
}


def hand_scores(words: tuple[str, ...], shift: int) -> list[float]:
    """Scores with few ties, exact in float32."""
    return [((7 * i + shift) % 11 - 5) / 4 for i in range(len(words))]


def csv_bytes(scores: dict[str, list[float]]) -> bytes:
    rows = ["example_id,word_index,score,method"]
    rows += [f"{example_id},{i},{s},mine" for example_id, per in scores.items() for i, s in enumerate(per)]
    return "\n".join(rows).encode()


def scored_directly(clf: Classifier, examples: list, scores: dict[str, list[float]], metrics: dict):
    """``evaluate_slice`` of the hand scores (as the CSV holds them) over ``examples``, for the
    class each example's prediction picks, with the metrics' settings ``metrics``."""
    given = [
        {CSV: Attribution("csv.mine", e.id, -1, e.words, np.asarray(scores[e.id], dtype=np.float32))}
        if e.id in scores
        else {}
        for e in examples
    ]
    return evaluate_slice(clf, examples, [], metric_params(list(metrics), metrics), given=given)


def interval(summary) -> str:
    """A summary as the pages' tables print it."""
    return f"{summary.mean:.3f} [{summary.low:.3f}, {summary.high:.3f}]"


def chart(at: AppTest, key: str):
    return plotly.io.from_json(next(c for c in at.get("plotly_chart") if c.key == key).proto.spec)


def mean_line(figure, method: str) -> list[float]:
    """The y values of ``method``'s mean curve in a slice's mean-curve figure."""
    found = next(t for t in figure.data if t.legendgroup == method and t.fill is None)  # not its band
    return list(found.y)


def captions(at: AppTest) -> str:
    """The page's captions as they read (markdown escapes removed)."""
    return as_read("\n".join(c.value for c in at.caption))


@pytest.fixture(scope="module")
def sst2() -> tuple[Classifier, list]:
    return Classifier(load_classifier("minilm-sst2")), load_examples("examples", "sst2")[:3]


def test_an_imported_csv_is_scored_beside_the_built_in_methods(sst2, tmp_path, monkeypatch) -> None:
    """SST-2 examples 0 and 2 imported (1 is not): the heatmap page shows the imported row, the
    faithfulness page's slice table and mean curves hold evaluate_slice's numbers for the same
    scores, the missing example is named, and loo_empty exported and imported back as
    ``json.mine`` has loo_empty's every figure."""
    clf, examples = sst2
    scores = {e.id: hand_scores(e.words, k) for k, e in enumerate(examples) if k != 1}
    store = RunStore(tmp_path)
    common = {"model": "minilm-sst2", "dataset": "examples", "split": "sst2", "metrics": ["deletion"]}
    import_bytes(csv_bytes(scores), "scores.csv", store, **common)
    ours = [explain_example(clf, e, ["loo_empty"]).attributions["loo_empty"] for e in examples]
    exported = [{**a.to_json(), "method": "mine"} for a in ours]  # the heatmap page's JSON, renamed
    import_bytes(json.dumps(exported).encode(), "ours.json", store, **common)
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path))

    at = AppTest.from_file(str(APP), default_timeout=600)
    at.query_params.update({"model": "minilm-sst2", "dataset": "examples", "split": "sst2", "index": "0"})
    at.session_state["heatmaps.methods"] = ["random"]
    at.session_state["heatmaps.imported"] = [CSV]
    at.run()
    assert not at.exception, at.exception
    picker = at.multiselect(key="heatmaps.imported")
    assert picker.value == [CSV]
    assert sorted(picker.options) == [
        f"{CSV} — scores.csv (csv), 2 examples",
        f"{ROUND_TRIP} — ours.json (json), 3 examples",
    ]
    heatmap = "".join(h.value for h in at.html if 'data-role="heatmap"' in h.value)
    assert f'data-method="{CSV}"' in heatmap and 'data-method="random"' in heatmap
    first = html.escape(examples[0].words[0])
    assert f'title="{first}: {scores[examples[0].id][0]:+.4g}"' in heatmap
    agreement = chart(at, "heatmaps.agreement")
    assert CSV in list(agreement.data[0].x)

    at.switch_page("app_pages/faithfulness.py")
    at.session_state["faithfulness.view"] = "Dataset slice"
    at.session_state["faithfulness.methods"] = ["loo_empty"]
    at.session_state["faithfulness.imported"] = [CSV, ROUND_TRIP]
    at.session_state["faithfulness.slice_n"] = 3
    at.run()
    at.button(key="faithfulness.slice_run").click().run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    table = at.dataframe[0].value
    assert list(table.index) == ["loo_empty", CSV, ROUND_TRIP]

    expected = scored_directly(clf, examples, scores, FAITHFULNESS)
    summary = metric_summaries(expected)[CSV]
    assert summary["deletion"].n == 2 and table.loc[CSV, "n"] == 2
    for key, column in (("deletion", "deletion AUC ↓"), ("comprehensiveness", "comprehensiveness ↑")):
        assert table.loc[CSV, column] == interval(summary[key])
    for key in ("insertion", "sufficiency", "log_odds"):
        assert interval(summary[key]) in table.loc[CSV].tolist()
    for key in ("deletion", "insertion", "comprehensiveness", "sufficiency"):
        figure = chart(at, f"faithfulness.slice.{key}")
        # the page pools these variants with loo_empty's, so their padding differs: equal to float32 rounding
        np.testing.assert_allclose(mean_line(figure, CSV), mean_curves(expected)[CSV][key]["mean"], rtol=0, atol=1e-6)
        assert mean_line(figure, ROUND_TRIP) == mean_line(figure, "loo_empty")
    assert table.loc[ROUND_TRIP].drop("n").tolist() == table.loc["loo_empty"].drop("n").tolist()
    assert table.loc[ROUND_TRIP, "n"] == table.loc["loo_empty", "n"] == 3
    notes = captions(at)
    assert "imported from scores.csv (csv, run run-" in notes and "2 of 3 examples" in notes
    assert "Not in the import, so left out of its figures: examples/sst2/1" in notes

    at.segmented_control(key="faithfulness.view").set_value("Removal modes compared").run()
    at.button(key="faithfulness.slice_run").click().run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    compared = at.dataframe[0].value
    assert list(compared.index) == ["loo_empty", CSV, ROUND_TRIP]
    # Scored again in other scorer batches: equal to float32 rounding (core.encoding.length_chunks),
    # which differs between CPUs' kernels (1.1e-6 relative on an AVX-512/AMX Xeon)
    assert compared.loc[CSV, "deletion AUC · delete"] == pytest.approx(summary["deletion"].mean, rel=1e-5)

    at.segmented_control(key="faithfulness.view").set_value("This example").run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    one = at.dataframe[0].value
    assert list(one.index) == ["loo_empty", CSV, ROUND_TRIP]
    own = expected.results[0].metrics[CSV]
    assert one.loc[CSV, "deletion AUC ↓"] == pytest.approx(own["deletion"].value, rel=1e-5)
    assert one.loc[CSV, "sufficiency ↓"] == pytest.approx(own["sufficiency"].value, rel=1e-5, abs=1e-9)


@pytest.fixture(scope="module")
def esnli() -> tuple[Classifier, list]:
    return Classifier(load_classifier("minilm-esnli")), load_examples("examples", "esnli")[:3]


def test_an_imported_csv_on_the_rationale_page(esnli, tmp_path, monkeypatch) -> None:
    """e-SNLI examples 12 and 14 imported (13 is not): the example view scores the imported map
    against the human highlights, and the slice view's plausibility table and optimal-threshold
    curve hold what evaluate_slice and plausibility_report give for the same scores."""
    from ui import rationales as R

    clf, examples = esnli
    scores = {e.id: hand_scores(e.words, k) for k, e in enumerate(examples) if k != 1}
    store = RunStore(tmp_path)
    import_bytes(csv_bytes(scores), "scores.csv", store, model="minilm-esnli", dataset="examples", split="esnli",
                 metrics=["iou"])  # fmt: skip
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path))

    at = AppTest.from_file(str(APP), default_timeout=600)
    at.query_params.update({"model": "minilm-esnli", "dataset": "examples", "split": "esnli", "index": "0"})
    at.session_state["heatmaps.methods"] = []  # the home page computes nothing
    at.run()
    at.switch_page("app_pages/rationales.py")
    at.session_state["rationales.methods"] = ["random"]
    at.session_state["rationales.imported"] = [CSV]
    at.run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert list(table.index) == ["random", CSV]

    # The page's default settings (ui.rationales.settings_form) as evaluate_slice's parameters.
    plausibility = {
        key: {"annotator": "majority"}
        | ({"threshold": 0.5} if key in R.THRESHOLD_METRICS else {})
        | ({"selection": "top_k", "k": 0, "threshold": 0.5} if key in ("token_f1", "iou_f1") else {})
        | ({"convention": R.CONVENTION.choices[0]} if key in R.CONVENTION_METRICS else {})
        for key in R.METRICS
    }
    expected = scored_directly(clf, examples, scores, plausibility)
    first = expected.results[0].metrics[CSV]
    assert table.loc[CSV, "IoU ↑"] == pytest.approx(first["iou"].value, abs=1e-12)
    assert table.loc[CSV, "AUPRC ↑"] == pytest.approx(first["auprc"].value, abs=1e-12)

    at.session_state["sidebar.index"] = 1  # e-SNLI 13: not in the import
    at.run()
    assert any(CSV in e and "no attribution of example 'examples/esnli/13'" in e for e in errors(at))

    at.session_state["sidebar.index"] = 0
    at.session_state["rationales.view"] = "Dataset slice"
    at.session_state["rationales.slice_n"] = 3
    at.run()
    at.button(key="rationales.slice_run").click().run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    table = at.dataframe[0].value
    assert CSV in table.index and table.loc[CSV, "n"] == 2
    summary = metric_summaries(expected)[CSV]
    for key in ("iou", "token_f1", "auprc"):
        assert table.loc[CSV, R.column_name(key)] == interval(summary[key])
    report = plausibility_report(expected, metric_params(list(plausibility), plausibility))
    assert report is not None
    tau = chart(at, "rationales.slice.tau_curve")
    line = next(t for t in tau.data if t.name.startswith(CSV))
    assert list(line.y) == list(report.thresholds[CSV].means.values())
    notes = captions(at)
    assert "2 of 3 examples" in notes and "left out of its figures: examples/esnli/13" in notes


def test_an_import_under_the_sidebars_autocast_or_head_override(sst2, tmp_path, monkeypatch) -> None:
    """The sidebar's model reference carries its autocast and head override: an import is stored
    for the model itself (it once failed as an unknown hub id) and offered under any reference of
    it (imports once vanished from every picker once autocast or a head was chosen)."""
    from core.model_refs import model_ref
    from services.imports import import_upload, imported_methods

    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path))
    _, examples = sst2
    data = csv_bytes({examples[0].id: hand_scores(examples[0].words, 0)})
    common = {"dataset": "examples", "split": "sst2"}
    with pytest.raises(ValueError, match="clear the sidebar's head-type override"):
        import_upload(data, "scores.csv", model=model_ref("minilm-sst2", "multi_label"), **common)
    run_id, _ = import_upload(data, "scores.csv", model=model_ref("minilm-sst2", None, "bfloat16"), **common)
    assert RunStore(tmp_path).get(run_id).model == "minilm-sst2"
    for reference in (
        "minilm-sst2",
        model_ref("minilm-sst2", None, "bfloat16"),
        model_ref("minilm-sst2", "regression"),
    ):
        assert [m.name for m in imported_methods(reference, "examples", "sst2")] == [CSV], reference
