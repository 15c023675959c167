"""Session bundles (issue 19 item 5) and the copy-link button: a view written to a zip and read
back losslessly, hostile zips refused with one line, ``python -m cli open`` printing the view or
starting the app on it, the app opening a bundle without recomputing, and the link of the view."""

from __future__ import annotations

import html
import io
import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from cli.main import main
from core.types import Attribution, Example
from engine import bundles
from engine.bundles import Bundle, read_bundle, write_bundle
from engine.explain import explain_example
from services.bundles import bundle_bytes, bundle_result
from tests.page_text import errors, one_layout
from ui.text import plain

APP = Path(__file__).resolve().parents[1] / "app.py"


def toy_bundle(linear_clf, toy_example) -> Bundle:
    explanation = explain_example(linear_clf, toy_example, ["loo_empty", "saliency"])
    return Bundle(
        model="toy-linear",
        label_names=("negative", "positive"),
        selection={"dataset": None, "text": toy_example.text, "target": None, "methods": ["loo_empty", "saliency"]},
        params={m: a.params for m, a in explanation.attributions.items()},
        example=explanation.example,
        probabilities=explanation.prediction.probabilities,
        predicted=explanation.prediction.predicted,
        target=explanation.target,
        attributions=explanation.attributions,
        errors={"im": "needs a masked LM"},
    )


def test_a_bundle_round_trips_losslessly(linear_clf, toy_example) -> None:
    bundle = toy_bundle(linear_clf, toy_example)
    data = write_bundle(bundle, {"heatmap.html": b"<html></html>", "heatmap.tex": b"\\documentclass{article}"})
    back = read_bundle(data, "view.zip")
    assert back.example == bundle.example and back.probabilities == bundle.probabilities
    assert (back.target, back.predicted, back.errors) == (bundle.target, bundle.predicted, bundle.errors)
    for method, attribution in bundle.attributions.items():
        assert back.attributions[method].scores.tobytes() == attribution.scores.tobytes()
        assert back.attributions[method].params == attribution.params
    assert back.figures == ("heatmap.html", "heatmap.tex")
    # the LOO score of 'great' is the toy model's known answer, kept through the bundle
    great = back.example.words.index("great")
    assert back.attributions["loo_empty"].scores[great] == bundle.attributions["loo_empty"].scores[great] > 0
    result = bundle_result(back)
    assert result.attributions.keys() == bundle.attributions.keys() and result.prediction.example == bundle.example
    assert back.head == result.prediction.head == "single_label"


def test_a_regression_bundle_keeps_its_head(linear_clf, toy_example, tmp_path, capsys) -> None:
    """A bundle of a regression model reopens as a score (it was shown as a class probability)."""
    from dataclasses import replace

    made = toy_bundle(linear_clf, toy_example)
    scores = {method: replace(attribution, target=0) for method, attribution in made.attributions.items()}
    bundle = replace(made, label_names=("score",), probabilities=(1.75,), predicted=0, target=0, head="regression",
                     attributions=scores)  # fmt: skip
    back = read_bundle(write_bundle(bundle), "score.zip")
    assert back.head == bundle_result(back).prediction.head == "regression"
    path = tmp_path / "score.zip"
    path.write_bytes(write_bundle(bundle))
    assert main(["open", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.split("\n")[1] == "score 'score' = 1.7500"
    single = write_bundle(toy_bundle(linear_clf, toy_example))
    payload = json.loads(zipfile.ZipFile(io.BytesIO(single)).read("bundle.json"))
    del payload["head"]  # a bundle written before the field: single-label
    assert read_bundle(json.dumps(payload).encode(), "old.json").head == "single_label"


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_hostile_bundles_are_refused_with_one_line(linear_clf, toy_example, monkeypatch) -> None:
    good = write_bundle(toy_bundle(linear_clf, toy_example))
    payload = json.loads(zipfile.ZipFile(io.BytesIO(good)).read("bundle.json"))

    def refused(data: bytes) -> str:
        with pytest.raises(ValueError) as caught:
            read_bundle(data, "b.zip")
        assert "\n" not in str(caught.value)
        return str(caught.value)

    assert "not a readable zip" in refused(good[: len(good) // 2])
    assert refused(b"hello").startswith(
        "b.zip is neither a session bundle (a zip) nor a bundle.json: it is not valid JSON"
    )
    assert "no bundle.json" in refused(zipped({"other.txt": b"x"}))
    assert "more than the 64 a bundle has" in refused(zipped({f"f{i}": b"" for i in range(65)}))
    assert "not valid JSON" in refused(zipped({"bundle.json": b'{"schema": "bundle/1", "model": '}))
    assert "nested too deeply" in refused(zipped({"bundle.json": b"[" * 100_000 + b"]" * 100_000}))
    assert "expected a 'bundle/1' record" in refused(zipped({"bundle.json": b'{"schema": "attribution/1"}'}))
    wrong = {**payload, "target": "one"}
    assert "not a valid bundle/1 file (ValueError" in refused(zipped({"bundle.json": json.dumps(wrong).encode()}))
    for key, junk in (("index", "x"), ("index", True), ("text", ["a"]), ("methods", [1]), ("shared_scale", "yes")):
        odd = {**payload, "selection": {**payload["selection"], key: junk}}  # the page puts these in its widgets
        assert f"selection {key} must be" in refused(zipped({"bundle.json": json.dumps(odd).encode()}))
    assert "unknown head 'ranking'" in refused(
        zipped({"bundle.json": json.dumps({**payload, "head": "ranking"}).encode()})
    )
    shifted = json.loads(json.dumps(payload))
    shifted["attributions"]["loo_empty"]["words"][0] = "<script>"
    assert "scores other words" in refused(zipped({"bundle.json": json.dumps(shifted).encode()}))
    monkeypatch.setattr(bundles, "MAX_JSON_BYTES", 1000)
    bomb = zipped({"bundle.json": b" " * 50_000})  # compresses to a few hundred bytes
    assert len(bomb) < 1000 and "more than allowed" in refused(bomb)


def test_the_command_line_prints_the_view_and_starts_the_app_on_it(linear_clf, toy_example, tmp_path, capsys,
                                                                  monkeypatch) -> None:  # fmt: skip
    bundle = toy_bundle(linear_clf, toy_example)
    path = tmp_path / "view.zip"
    path.write_bytes(write_bundle(bundle, {"heatmap.html": b"<html></html>"}))
    assert main(["open", str(path)]) == 0
    out = capsys.readouterr().out
    assert "toy-linear, typed text" in out and "figures in the bundle: heatmap.html" in out
    great = bundle.attributions["loo_empty"].scores[bundle.example.words.index("great")]
    assert any(line.split()[0] == "great" and f"{float(great):.5g}" in line for line in out.splitlines())
    assert main(["open", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["attributions"]["saliency"] == bundle.attributions["saliency"].to_json()
    started = {}

    def fake_run(command, env, cwd, check):
        started.update(command=command, bundle=env["ATTRIBUTION_BUNDLE"])

        class Done:
            returncode = 0

        return Done()

    monkeypatch.setattr("cli.bundle.subprocess.run", fake_run)
    assert main(["open", str(path), "--app", "--port", "8600"]) == 0
    assert started["command"][1:4] == ["-m", "streamlit", "run"] and started["command"][-2:] == [
        "--server.port",
        "8600",
    ]
    assert started["bundle"] == str(path.resolve())
    capsys.readouterr()
    assert main(["open", str(path), "--port", "8600"]) == 2  # a port without the app was ignored
    assert capsys.readouterr().err == "error: --port is the app's port: add --app\n"
    (tmp_path / "bad.zip").write_bytes(b"PK\x03\x04broken")
    assert main(["open", str(tmp_path / "bad.zip")]) == 2
    assert "bad.zip is not a readable zip file" in capsys.readouterr().err


# ---------------------------------------------------------------------------------- in the app


def planted_bundle(tmp_path: Path, params: dict | None = None) -> tuple[Path, list[float]]:
    """A bundle of the bundled SST-2 model on example 2 whose ``random`` scores were planted by
    hand: the app shows these, not a recomputation."""
    from core.datasets import load_bundled_examples

    example = load_bundled_examples(split="sst2")[2]
    scores = [round(0.01 * (i + 1), 2) for i in range(len(example.words))]
    attribution = Attribution("random", example.id, 0, example.words, np.asarray(scores, dtype=np.float32))
    from services.explain import HeatmapResult, PredictionResult

    result = HeatmapResult(
        PredictionResult(example, (0.75, 0.25), 0, ("negative", "positive"), 0), 0, {"random": attribution}
    )
    selection = {"dataset": "examples", "split": "sst2", "index": 2, "methods": ["random"], "view": "words"}
    path = tmp_path / "planted.zip"
    path.write_bytes(bundle_bytes("minilm-sst2", selection, params or {"random": {}}, result, dict))
    return path, scores


def test_the_app_opens_the_bundle_it_was_started_on_without_recomputing(tmp_path, monkeypatch) -> None:
    path, scores = planted_bundle(tmp_path)
    monkeypatch.setenv("ATTRIBUTION_BUNDLE", str(path))
    at = AppTest.from_file(str(APP), default_timeout=300).run()
    assert not at.exception, at.exception
    assert any(plain("planted.zip") in info.value for info in at.info), [i.value for i in at.info]
    assert at.query_params["index"] == "2" and at.query_params["dataset"] == "examples"
    shown = "".join(h.value for h in at.html if 'data-role="heatmap"' in h.value)
    from core.datasets import load_bundled_examples

    words = load_bundled_examples(split="sst2")[2].words
    for word, score in zip(words, scores, strict=True):
        assert f'title="{html.escape(word)}: {score:+.4g}"' in shown
    assert "75.0%" in "".join(m.value for m in at.markdown)  # the bundle's prediction, not the model's


def test_a_bundle_parameter_the_form_cannot_take_is_named(tmp_path, monkeypatch) -> None:
    path, _ = planted_bundle(tmp_path, {"random": {"seed": "seven"}})
    monkeypatch.setenv("ATTRIBUTION_BUNDLE", str(path))
    at = AppTest.from_file(str(APP), default_timeout=300).run()
    assert not at.exception, at.exception
    assert any("cannot take random.seed='seven'" in e for e in errors(at)), errors(at)
    assert at.number_input(key="heatmaps.param.random.seed").value == 0  # the default, said so above


def test_the_heatmap_page_offers_the_bundle_and_the_sidebar_the_link() -> None:
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.query_params.update({"model": "minilm-sst2", "dataset": "examples", "split": "sst2", "index": "1",
                            "methods": "random"})  # fmt: skip
    at.run()
    assert not at.exception, at.exception
    assert at.download_button(key="heatmaps.download.bundle").label == "Session bundle"
    [uploader] = [u for u in at.get("file_uploader") if "bundle" in u.proto.label]
    assert uploader.proto.max_upload_size_mb == 32  # the size read_bundle takes, refused in the browser first
    links = [c.value for c in at.code if "model=" in c.value]
    assert links == ["?dataset=examples&index=1&methods=random&model=minilm-sst2&split=sst2"]


def test_a_bundle_of_typed_text_keeps_the_text_as_typed() -> None:
    """A bundle kept typed text as its words joined (``A < b > bold``), so it reopened on another text."""
    from services import as_typed

    words = ("A", "<", "b", ">", "bold", "film", "!")
    assert as_typed("A<b>bold film!", words) == "A<b>bold film!"
    assert as_typed("another text", words) == "A < b > bold film !"  # the words explained, when it differs
    assert as_typed(None, words) == "A < b > bold film !"

    from types import SimpleNamespace

    from services.explain import HeatmapResult, PredictionResult
    from ui import bundles
    from ui.export import Heatmap
    from ui.state import Selection

    attribution = Attribution("random", "free text", 1, words, np.float32(np.arange(7)))
    example = Example(segments=(words,), id="free text")
    result = HeatmapResult(PredictionResult(example, (0.2, 0.8), 1, ("neg", "pos"), 0), 1, {"random": attribution})
    state = SimpleNamespace(session_state={"sidebar.text": "A<b>bold film!"})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bundles, "st", state)
        patch.setattr(bundles, "heatmap_files", lambda drawn: {})
        data = bundles.bundle_data(
            Selection("minilm-sst2", example=example), result, Heatmap(words, (0,) * 7, {}), None
        )()
    assert read_bundle(data, "typed.zip").selection["text"] == "A<b>bold film!"


def test_the_page_bundle_carries_the_heatmap_figures(tmp_path) -> None:
    """What the page's "Session bundle" button makes: the view and the heatmap as HTML and LaTeX
    (and PNG where a browser is installed), with hostile words escaped in both."""
    from functools import partial

    from services.explain import HeatmapResult, PredictionResult
    from ui.export import Heatmap, chromium_path, heatmap_files

    words = ("<script>", "50%", "a_b")
    attribution = Attribution("random", "t/0", 1, words, np.float32([0.5, -0.25, 1.0]))
    example = Example(segments=(words,), id="t/0")
    result = HeatmapResult(PredictionResult(example, (0.2, 0.8), 1, ("neg", "pos"), 0), 1, {"random": attribution})
    drawn = Heatmap(words, (0, 0, 0), {"random": attribution})
    data = bundle_bytes(
        "minilm-sst2", {"text": "<script> 50% a_b"}, {"random": {}}, result, partial(heatmap_files, drawn)
    )
    back = read_bundle(data, "page.zip")
    assert back.attributions["random"].scores.tolist() == [0.5, -0.25, 1.0]
    try:
        chromium_path()
        expected = ("heatmap.html", "heatmap.tex", "heatmap.png")
    except RuntimeError:
        expected = ("heatmap.html", "heatmap.tex")
    assert back.figures == expected
    archive = zipfile.ZipFile(io.BytesIO(data))
    assert "<script>" not in archive.read("figures/heatmap.html").decode()
    assert "50\\%" in archive.read("figures/heatmap.tex").decode()


def test_opening_a_bundle_sets_the_parameter_form_so_recompute_gives_its_scores(tmp_path, monkeypatch) -> None:
    """A bundle made with other parameters than the form's defaults (IG 20 steps; LIME 300
    samples, [MASK] removal, seed 7): opening it sets the sidebar and every parameter widget to
    the bundle's values, so "Recompute" gives the bundle's scores and costs (the defaults would
    not)."""
    from core.classifier import Classifier
    from core.datasets import load_bundled_examples
    from core.loaded import load_classifier
    from services.explain import HeatmapResult, PredictionResult

    clf = Classifier(load_classifier("minilm-sst2"))
    example = load_bundled_examples(split="sst2")[2]
    params = {"integrated_gradients": {"n_steps": 20}, "lime": {"n_samples": 300, "removal": "mask", "seed": 7}}
    made = explain_example(clf, example, list(params), params=params)
    prediction = PredictionResult(
        made.example, made.prediction.probabilities, made.prediction.predicted, clf.label_names, made.dropped_words
    )
    result = HeatmapResult(prediction, made.target, made.attributions)
    selection = {"dataset": "examples", "split": "sst2", "index": 2, "methods": list(params), "view": "words",
                 "mlm": "minilm-mlm"}  # fmt: skip
    path = tmp_path / "tuned.zip"
    resolved = {method: a.params for method, a in made.attributions.items()}
    path.write_bytes(bundle_bytes("minilm-sst2", selection, resolved, result, dict))
    defaults = explain_example(clf, example, list(params)).attributions
    for method, attribution in made.attributions.items():  # the form's defaults give another view
        assert defaults[method].forward_passes != attribution.forward_passes

    monkeypatch.setenv("ATTRIBUTION_BUNDLE", str(path))
    at = AppTest.from_file(str(APP), default_timeout=600).run()
    assert not at.exception, at.exception
    assert any(plain("tuned.zip") in info.value for info in at.info)
    assert at.session_state["sidebar.index"] == 2 and at.session_state["sidebar.mlm"] == "minilm-mlm"
    assert at.multiselect(key="heatmaps.methods").value == ["integrated_gradients", "lime"]
    assert at.number_input(key="heatmaps.param.integrated_gradients.n_steps").value == 20
    assert at.number_input(key="heatmaps.param.lime.n_samples").value == 300
    assert at.number_input(key="heatmaps.param.lime.seed").value == 7
    assert at.selectbox(key="heatmaps.param.lime.removal").value == "mask"
    assert at.number_input(key="heatmaps.param.lime.kernel_width").value == 25.0  # the bundle's, also the default

    at.button(key="heatmaps.recompute_bundle").click().run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert not any("tuned.zip" in info.value for info in at.info)  # computed now, not read from the bundle
    shown = one_layout("".join(h.value for h in at.html if 'data-role="heatmap"' in h.value))
    for method, attribution in made.attributions.items():  # the method's row, over the heatmap's lines
        row = "".join(re.findall(rf'<tr class="hm-row" data-method="{method}">(.*?)</tr>', shown))
        titles = re.findall(r'class="hm-cell"[^>]* title="([^"]*)"', row)
        expected = [
            f"{html.escape(w)}: {float(s):+.4g}" for w, s in zip(attribution.words, attribution.scores, strict=True)
        ]
        assert titles == expected
    costs = next(d.value for d in at.dataframe if "forward passes" in d.value.columns).set_index("method")
    for method, attribution in made.attributions.items():
        assert costs.loc[method, "forward passes"] == attribution.forward_passes
        assert costs.loc[method, "backward passes"] == attribution.backward_passes
