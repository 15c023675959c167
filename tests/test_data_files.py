"""A data file of one's own (``file:PATH``): read with ``datasets`` (CSV, TSV, JSON lines,
Parquet), its columns found by name, bad files refused with one line; a run keys it by content,
so an edited file is another run and the old one refuses to resume; the app's sidebar reads it
from a typed path or a link, and a shared server reads none. A split column names the file's
splits, which a remove-and-retrain job trains and scores on."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core.datasets import available_splits, load_examples
from services import access

APP = Path(__file__).resolve().parents[1] / "app.py"
ROWS = [
    ("A wonderful, moving film.", 1),
    ("Dull, slow and far too long.", 0),
    ("It was fine.", None),
]


@pytest.fixture
def reviews(tmp_path) -> Path:
    path = tmp_path / "reviews.csv"
    pd.DataFrame({"text": [t for t, _ in ROWS], "label": [lab for _, lab in ROWS]}).to_csv(path, index=False)
    return path


def json_lines(folder: Path, *rows: str) -> Path:
    """A JSON lines data file of ``rows`` in ``folder``."""
    path = folder / "marked.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_each_format_reads_the_same_examples(tmp_path, reviews):
    frame = pd.read_csv(reviews)
    frame.to_json(tmp_path / "reviews.jsonl", orient="records", lines=True)
    frame.to_parquet(tmp_path / "reviews.parquet")
    frame.to_csv(tmp_path / "reviews.tsv", sep="\t", index=False)
    expected = [
        (("A", "wonderful", ",", "moving", "film", "."),),
        (("Dull", ",", "slow", "and", "far", "too", "long", "."),),
    ]
    for suffix in ("csv", "jsonl", "parquet", "tsv"):
        name = f"file:{tmp_path / f'reviews.{suffix}'}"
        examples = load_examples(name, "all")
        assert [e.segments for e in examples[:2]] == expected, suffix
        assert [e.label for e in examples] == [1, 0, None], suffix  # an empty label cell: no label
        assert [e.id for e in examples] == ["reviews/0", "reviews/1", "reviews/2"]
        assert {e.dataset for e in examples} == {name} and available_splits(name) == ["all"]
    assert len(load_examples(f"file:{reviews}", "all", limit=2)) == 2


def test_a_pair_file_reads_premise_and_hypothesis(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"premise": "A man sleeps.", "hypothesis": "Nobody sleeps.", "label": 2}\n')
    [example] = load_examples(f"file:{path}", "all")
    assert example.segments == (("A", "man", "sleeps", "."), ("Nobody", "sleeps", "."))
    assert example.label == 2


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("notes.txt", "hello", "a data file is one of .csv, .tsv, .json, .jsonl, .parquet"),
        ("missing.csv", None, "no file"),
        ("wide.csv", "text,label\nA wonderful, moving film.,1\n", "have more fields than its header"),
        ("columns.csv", "body,label\ngood,1\n", "has no text column: name one of text, sentence"),
        ("fraction.csv", "text,label\ngood,0.5\n", "label 0.5 of row 0 in 'label' is not a class index"),
        ("empty.csv", "text,label\ngood,1\n,0\n", "row 1 has no text in 'text'"),
        ("header.csv", "text,label\n", "cannot read .*header.csv as a csv file: it has no rows"),
        ("broken.jsonl", '{"text": "good"\n', "cannot read .*broken.jsonl as a jsonl file: JSON parse error"),
        ("quote.csv", 'text,label\n"unclosed,1\nok,0\n', "as a csv file: Error tokenizing data. .* EOF inside string"),
    ],
)
def test_a_bad_file_is_refused_in_one_line(tmp_path, capfd, name, content, message):
    """In one line that says what is wrong (the parser's words, not the loader's "An error
    occurred"), without the loader's progress bars or its own log line before ours."""
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises((ValueError, FileNotFoundError), match=message) as raised:
        load_examples(f"file:{path}", "all")
    assert "\n" not in str(raised.value)
    err = capfd.readouterr().err
    assert "Generating train split" not in err and "Failed to load" not in err


def test_the_api_and_the_command_line_read_a_file_without_a_split(reviews, capsys):
    import json

    import api
    from cli.main import main

    result = api.evaluate("minilm-sst2", f"file:{reviews}", methods=["random"], metrics=["comprehensiveness"])
    assert len(result.evaluation.results) == 3
    assert main(["predict", "--model", "minilm-sst2", "--dataset", f"file:{reviews}", "--json"]) == 0
    predicted = json.loads(capsys.readouterr().out)
    assert [r["gold"] for r in predicted["examples"]] == [1, 0, None]
    assert predicted["accuracy"] == pytest.approx(1.0)  # the two labelled reviews, both right
    # bench said "--split is needed with --dataset" for a file, whose rows are all one split
    argv = ["bench", "--model", "minilm-sst2", "--dataset", f"file:{reviews}", "--methods", "random"]
    assert main([*argv, "--min-words", "1"]) == 0
    benched = json.loads(capsys.readouterr().out)
    assert benched["examples"] == 3 and benched["dataset"] == f"file:{reviews}/all"


def test_label_words_are_classes_a_model_of_the_same_names_counts_as_its_own(tmp_path, capsys):
    import json

    import api
    from cli.main import main
    from core.datasets import align_labels
    from core.datasets.labels import alignment_note

    path = tmp_path / "worded.csv"  # sorted as a reader sorts, case aside: "negative" before "Positive"
    pd.DataFrame({"text": [t for t, _ in ROWS], "label": ["Positive", " negative", ""]}).to_csv(path, index=False)
    examples = load_examples(f"file:{path}", "all")
    assert [e.label for e in examples] == [1, 0, None]
    assert examples[0].label_names == ("negative", "Positive") and examples[1].gold_name == "negative"
    aligned = align_labels(examples, ("positive", "negative"))  # a model numbering them the other way round
    assert [e.label for e in aligned] == [0, 1, None] and aligned[0].label_names == ("positive", "negative")
    assert align_labels(examples, ("hatespeech", "normal", "offensive")) == examples  # other classes: as they are
    # the command line's accuracy, a dataset evaluation and the API's gold target count the model's classes
    assert main(["predict", "--model", "minilm-sst2", "--dataset", f"file:{path}", "--json"]) == 0
    predicted = json.loads(capsys.readouterr().out)
    assert [r["gold"] for r in predicted["examples"]] == [1, 0, None] and predicted["accuracy"] == 1.0
    evaluated = api.evaluate("minilm-sst2", f"file:{path}", methods=["random"], metrics=["comprehensiveness"])
    assert [r.example.label for r in evaluated.evaluation.results] == [1, 0, None]
    explained = api.explain_many("minilm-sst2", f"file:{path}", ["random"], target="gold", limit=2)
    assert [r.target for r in explained] == [1, 0]
    # class numbers as text (JSON strings) are class numbers
    numbered = json_lines(tmp_path, '{"text": "good", "label": "1"}', '{"text": "bad", "label": "0"}')
    assert [(e.label, e.label_names) for e in load_examples(f"file:{numbered}", "all")] == [(1, ()), (0, ())]
    # -1 is no label among names too; a class number among names is refused (which class is it?)
    marked = json_lines(tmp_path, '{"text": "good", "label": "positive"}', '{"text": "meh", "label": -1}')
    assert [(e.label, e.label_names) for e in load_examples(f"file:{marked}", "all")] == [(0, ("positive",))] + [
        (None, ("positive",))
    ]
    mixed = json_lines(tmp_path, '{"text": "good", "label": "positive"}', '{"text": "bad", "label": 0}')
    with pytest.raises(ValueError, match="label 0 of row 1 in 'label' is a class number, where the column names"):
        load_examples(f"file:{mixed}", "all")
    # R's write.csv marks a missing label NA: the message says to leave the cell empty instead
    r_csv = tmp_path / "r.csv"
    r_csv.write_text('"text","label"\n"good",1\n"meh",NA\n')
    with pytest.raises(ValueError, match="where other rows hold NA: leave the cell empty"):
        load_examples(f"file:{r_csv}", "all")
    # a class the model does not name has no gold label; the rest are the model's
    three = json_lines(
        tmp_path, *(f'{{"text": "{t}", "label": "{lab}"}}' for t, lab in [("good", "Positive"), ("bad", "negative"),
                                                                          ("so so", "neutral")])
    )  # fmt: skip
    assert main(["predict", "--model", "minilm-sst2", "--dataset", f"file:{three}", "--json"]) == 0
    out, err = capsys.readouterr()
    assert [r["gold"] for r in json.loads(out)["examples"]] == [1, 0, None] and json.loads(out)["accuracy"] == 1.0
    assert "The model names no class neutral of the dataset's, so its examples of that class have no gold" in err
    assert alignment_note(("bad", "good"), ("negative", "positive")).endswith(
        "number: bad → negative, good → positive."
    )
    assert alignment_note(("negative", "Positive"), ("positive", "negative")) is None  # the same names
    assert main(["evaluate", "--model", "minilm-sst2", "--dataset", f"file:{three}", "--methods", "random",
                 "--metrics", "comprehensiveness", "--target", "gold", "--quiet", "--json"]) == 0  # fmt: skip
    assert "1 of 3 examples have no gold label: their predicted class is explained" in capsys.readouterr().err


def test_rationale_spans_mark_the_words_they_overlap(tmp_path):
    """Character spans, as annotation tools export them: a word is highlighted when a span covers
    any of its characters; a CSV cell holds the spans' JSON text."""
    path = json_lines(
        tmp_path,
        '{"text": "A wonderful, moving film.", "label": 1, "rationale": [[2, 11], [17, 19]]}',
        '{"text": "Dull and slow.", "label": 0, "rationale": []}',
        '{"text": "Fine.", "label": 1}',
    )
    marked, empty, plain = load_examples(f"file:{path}", "all")
    assert marked.rationale == marked.rationales[0] == (0, 1, 0, 1, 0, 0)  # "wonderful"; "ng" of "moving"
    assert empty.rationale == (0, 0, 0, 0) and not plain.has_rationale
    studio = json_lines(  # Label Studio's JSON-min export: records with start and end
        tmp_path,
        '{"text": "A wonderful, moving film.", "rationale": [{"start": 2, "end": 11, "text": "wonderful", '
        '"labels": ["evidence"]}, {"start": 20, "end": 24}]}',
    )
    assert load_examples(f"file:{studio}", "all")[0].rationale == (0, 1, 0, 0, 1, 0)
    tsv = tmp_path / "quoted.tsv"  # a quote in a TSV is text, as in SST-2: the span still marks "fine"
    tsv.write_text('text\trationale\n"wow" said the critic , a fine film\t[[26, 30]]\n')
    [quoted] = load_examples(f"file:{tsv}", "all")
    assert quoted.words[:3] == ('"', "wow", '"') and [w for w, m in zip(quoted.words, quoted.rationale) if m] == [
        "fine"
    ]
    csv = tmp_path / "marked.csv"
    csv.write_text('text,rationale\n"A wonderful, moving film.","[[20, 24]]"\n')
    assert load_examples(f"file:{csv}", "all")[0].rationale == (0, 0, 0, 0, 1, 0)
    for bad in ('"[[3, 99]]"', '"[[5, 2]]"', "\"__import__('os')\"", '"[[1.5, 3]]"'):
        csv.write_text(f'text,rationale\n"A wonderful, moving film.",{bad}\n')
        with pytest.raises(ValueError, match="the rationale of row 0 is not a list of"):
            load_examples(f"file:{csv}", "all")


def split_file(folder: Path) -> Path:
    """A data file whose split column puts rows 0, 2 and 4 in train and rows 1 and 3 in dev."""
    path = folder / "marked.csv"
    rows = [(f"review number {i} .", i % 2, "train" if i % 2 == 0 else "dev") for i in range(5)]
    pd.DataFrame(rows, columns=["text", "label", "split"]).to_csv(path, index=False)
    return path


def test_a_split_column_names_the_files_splits(tmp_path, reviews):
    name = f"file:{split_file(tmp_path)}"
    assert available_splits(name) == ["all", "train", "dev"]
    dev = load_examples(name, "dev")
    assert [e.id for e in dev] == ["marked/1", "marked/3"]  # row numbers in the file, as in "all"
    assert [e.text for e in dev] == ["review number 1 .", "review number 3 ."] and {e.split for e in dev} == {"dev"}
    assert [e.id for e in load_examples(name, "train", limit=2)] == ["marked/0", "marked/2"]
    assert len(load_examples(name, "all")) == 5
    with pytest.raises(ValueError, match="has no split 'test'; its splits: all, train, dev$"):
        load_examples(name, "test")
    with pytest.raises(ValueError, match="its splits: all \\(a 'split' column names a file's other splits\\)"):
        load_examples(f"file:{reviews}", "train")


def test_a_remove_and_retrain_job_takes_a_files_train_and_dev_rows(tmp_path, reviews):
    import shlex

    from engine.roar.recipe import recipe_of
    from engine.roar.report import command_of
    from engine.roar.run import head_names
    from experiments.roar.job import RoarJob

    folder = tmp_path / "my data"
    folder.mkdir()
    name = f"file:{split_file(folder)}"
    job = RoarJob(methods=("loo_empty",), model=str(tmp_path / "any"), dataset=name, train_steps=2)
    recipe = recipe_of(job)
    assert (recipe.dataset, recipe.train_split, recipe.eval_split) == (name, "train", "dev")
    command = shlex.split(command_of(job))  # the path with a space is one argument
    assert command[command.index("--dataset") + 1] == name
    assert head_names(job, load_examples(name, "all")) == ["0", "1"]  # a model without a config: the numbers
    bundled = RoarJob(methods=("loo_empty",), model="minilm-sst2", dataset=name, train_steps=2)
    assert head_names(bundled, load_examples(name, "all")) == ["negative", "positive"]  # the model's own names
    # one of the bundled adapters retrains from the encoder it was fine-tuned from, as its task's job does
    from core.models import encoder_path

    assert recipe_of(bundled).base_model == str(encoder_path())
    one_split = RoarJob(methods=("loo_empty",), model=str(tmp_path / "any"), dataset=f"file:{reviews}", train_steps=2)
    with pytest.raises(
        ValueError, match="needs a training split and an evaluation split .* 'split' column .*found none"
    ):
        recipe_of(one_split)


def test_a_run_keys_the_file_by_content(tmp_path, reviews):
    from engine.runs.executor import open_run
    from engine.runs.spec import RunSpec
    from engine.runs.store import RunStore

    store = RunStore(tmp_path / "results")
    spec = RunSpec(
        model="minilm-sst2", dataset=f"file:{reviews}", split="all", limit=None,
        methods=("random",), metrics=("comprehensiveness",), target="predicted",
    )  # fmt: skip
    first = open_run(spec, store)
    assert first.created and [e.id for e in first.examples] == ["reviews/0", "reviews/1", "reviews/2"]
    assert not open_run(spec, store).created  # the same bytes: the same run
    from services.runs import gold_names, label_note

    assert gold_names(first.info, "single_label") == ("negative", "positive")  # class numbers: the model's names
    worded = tmp_path / "worded.csv"
    pd.DataFrame({"text": ["Good.", "Bad."], "label": ["Positive", "negative"]}).to_csv(worded, index=False)
    named = open_run(dataclasses.replace(spec, dataset=f"file:{worded}"), store)
    assert gold_names(named.info, "single_label") == ("negative", "positive")  # the names the run numbered by
    assert label_note(named.info, "single_label") is None and label_note(first.info, "single_label") is None
    other = tmp_path / "other.csv"  # names the model does not give: taken by number, and said so
    pd.DataFrame({"text": ["Good.", "Bad."], "label": ["pos", "neg"]}).to_csv(other, index=False)
    guessed = open_run(dataclasses.replace(spec, dataset=f"file:{other}"), store)
    assert label_note(guessed.info, "single_label").endswith("of the same number: neg → negative, pos → positive.")
    reviews.write_text(reviews.read_text().replace("moving", "stirring"))
    second = open_run(spec, store)
    assert second.created and second.info.run_id != first.info.run_id
    with pytest.raises(ValueError, match=f"its data file {reviews} changed since"):
        open_run(spec, store, resume=first.info.run_id)


def sidebar(params: dict[str, str] | None = None, state: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.query_params.update({"methods": "random", **(params or {})})
    for key, value in (state or {}).items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_sidebar_reads_a_typed_path_and_a_link(reviews):
    typed = sidebar(state={"sidebar.dataset": "data file", "sidebar.data_file": str(reviews), "sidebar.index": 1})
    chosen = typed.session_state["selection"]
    assert chosen.error is None and chosen.dataset == f"file:{reviews}" and chosen.split == "all"
    assert chosen.example.text == "Dull , slow and far too long ."
    assert "reviews/1 · gold: 0" in [c.value for c in typed.sidebar.caption]
    assert typed.query_params["dataset"] == f"file:{reviews}" and typed.query_params["index"] == "1"
    linked = sidebar({"dataset": f"file:{reviews}", "index": "2"})
    assert linked.session_state["selection"].example.text == "It was fine ."
    assert linked.session_state["sidebar.data_file"] == str(reviews)
    empty = sidebar(state={"sidebar.dataset": "data file"})
    assert "Upload a data file, or type the path of one, in the sidebar" in empty.session_state["selection"].error
    missing = sidebar({"dataset": f"file:{reviews.parent / 'gone.csv'}"})
    assert "no file" in missing.session_state["selection"].error


def test_the_sidebar_offers_a_files_splits_and_a_link_picks_one(tmp_path):
    path = split_file(tmp_path)
    linked = sidebar({"dataset": f"file:{path}", "split": "dev", "index": "1"})
    assert linked.selectbox(key="sidebar.split").options == ["all", "train", "dev"]
    assert linked.session_state["selection"].example.id == "marked/3"
    assert linked.query_params["split"] == "dev"
    unknown = sidebar({"dataset": f"file:{path}", "split": "test"})
    assert unknown.session_state["selection"].split == "all"
    assert any("has no split “test”: showing all" in w.value for w in unknown.sidebar.warning)


def upload(at: AppTest, path: Path) -> AppTest:
    """``path``'s bytes given to the sidebar's uploader, under its own name."""
    at.file_uploader(key="sidebar.upload").set_value((path.name, path.read_bytes(), "text/csv")).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_an_upload_is_kept_in_the_results_folder_and_read_as_a_data_file(reviews, monkeypatch, tmp_path):
    import os

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", "results")  # relative, as the default is
    at = upload(sidebar(state={"sidebar.dataset": "data file"}), reviews)
    chosen = at.session_state["selection"]
    kept = Path(chosen.dataset.removeprefix("file:"))
    assert kept.parent.parent == tmp_path / "results" / "uploads" and kept.name == "reviews.csv"
    assert kept.read_bytes() == reviews.read_bytes() and chosen.example.id == "reviews/0"
    assert at.session_state["sidebar.data_file"] == str(kept)  # the path box shows where it is kept
    again = upload(sidebar(state={"sidebar.dataset": "data file"}), reviews)
    assert again.session_state["selection"].dataset == chosen.dataset  # the same bytes: the same file
    assert os.listdir(tmp_path / "results" / "uploads") == [kept.parent.name]


def test_an_upload_is_picked_again_after_a_reload_and_deleted(reviews, monkeypatch, tmp_path):
    """An upload is chosen again from the kept ones (no second upload after a reload), named with
    its size and the stored runs on it; deleting it removes the file and its folder, empties the
    path box, and leaves the runs on it readable. A file that a live run is computed on, or none
    that an upload kept, is not deleted."""
    from engine.runs.executor import open_run
    from engine.runs.spec import RunSpec
    from engine.runs.store import RunStore
    from services.uploads import delete_upload, kept_uploads

    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path / "results"))
    name = upload(sidebar(state={"sidebar.dataset": "data file"}), reviews).session_state["selection"].dataset
    store = RunStore(tmp_path / "results")
    spec = RunSpec(
        model="minilm-sst2", dataset=name, split="all", limit=2,
        methods=("random",), metrics=("comprehensiveness",), target="predicted",
    )  # fmt: skip
    run_id = open_run(spec, store).info.run_id
    at = sidebar(state={"sidebar.dataset": "data file"})  # a new session: nothing typed or uploaded
    picker = at.selectbox(key="sidebar.kept_upload")
    assert picker.value is None and picker.options == [f"reviews.csv · {reviews.stat().st_size / 1024:.1f} KB · 1 run"]
    picker.set_value(name).run()
    assert not at.exception and at.session_state["selection"].example.id == "reviews/0"
    assert at.session_state["sidebar.data_file"] == name.removeprefix("file:")
    store.claim(run_id, "serial")  # this process computes a run on it
    at.button(key="sidebar.delete_upload").click().run()
    refusal = at.sidebar.error[0].value  # escaped: a file's name is the uploader's
    assert "reviews\\.csv" in refusal and f"run {run_id} is being computed on reviews.csv" in refusal.replace("\\", "")
    assert Path(name.removeprefix("file:")).is_file()
    store.finish(run_id, "stopped", 1.0)
    at.button(key="sidebar.delete_upload").click().run()
    assert not at.exception and kept_uploads(()) == [] and not Path(name.removeprefix("file:")).parent.exists()
    assert at.session_state["sidebar.data_file"] == ""
    assert not [s for s in at.selectbox if s.key == "sidebar.kept_upload"]  # no upload left to pick
    assert "Upload a data file, or type the path" in at.session_state["selection"].error
    assert len(store.rows(run_id)) == 0 and store.get(run_id).dataset == name  # the run is still there
    with pytest.raises(ValueError, match="is not an uploaded data file"):
        delete_upload(f"file:{reviews}")


def test_a_shared_server_reads_uploads_and_no_file_of_its_own(reviews, monkeypatch, tmp_path):
    monkeypatch.setenv(access.SHARED_ENV, "1")
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path / "results"))
    access.policy.clear()
    try:
        at = sidebar({"dataset": f"file:{reviews}"})
        assert at.session_state["selection"].dataset == "examples"
        assert any("is not read on a shared server" in w.value for w in at.sidebar.warning)
        at.selectbox(key="sidebar.dataset").set_value("data file").run()
        assert not [t for t in at.text_input if t.key == "sidebar.data_file"]  # no path box: only an upload
        assert "Upload a data file in the sidebar" in at.session_state["selection"].error
        chosen = upload(at, reviews).session_state["selection"]
        assert chosen.error is None and chosen.example.text == "A wonderful , moving film ."
        linked = sidebar({"dataset": chosen.dataset, "index": "1"})  # a link to the upload, as Copy link makes
        assert linked.session_state["selection"].example.id == "reviews/1"
        from services.uploads import save_upload

        with pytest.raises(ValueError, match="a data file here is one of .csv, .tsv, .json, .jsonl$"):
            save_upload("reviews.parquet", pd.read_csv(reviews).to_parquet())
    finally:
        access.policy.clear()


def test_a_shared_server_lists_runs_on_an_upload_only_to_who_uploaded_it(reviews, monkeypatch, tmp_path):
    """A visitor's data stays theirs: another session neither lists nor opens the runs and jobs on
    it, and a session that uploads the same bytes (under any name), or opens them by a link to the
    data, does."""
    from engine.runs.executor import open_run
    from engine.runs.spec import RunSpec
    from engine.runs.store import RunStore
    from services import roar, runs
    from services.uploads import delete_upload, save_upload

    monkeypatch.setenv(access.SHARED_ENV, "1")
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path / "results"))
    access.policy.clear()
    try:
        at = upload(sidebar(state={"sidebar.dataset": "data file"}), reviews)
        mine = at.session_state["uploads.mine"]
        assert mine == (at.session_state["selection"].dataset,)
        assert at.selectbox(key="sidebar.kept_upload").options[0].startswith("reviews.csv · ")  # theirs to pick
        assert not [b for b in at.button if b.key == "sidebar.delete_upload"]  # but not to delete
        other = sidebar(state={"sidebar.dataset": "data file"})
        assert not [s for s in other.selectbox if s.key == "sidebar.kept_upload"]  # nor another's to pick
        with pytest.raises(ValueError, match="uploads are not deleted on a shared server"):
            delete_upload(mine[0])
        store = RunStore(tmp_path / "results")
        spec = RunSpec(
            model="minilm-sst2", dataset=mine[0], split="all", limit=2,
            methods=("random",), metrics=("comprehensiveness",), target="predicted",
        )  # fmt: skip
        on_upload = open_run(spec, store).info.run_id
        on_bundled = open_run(dataclasses.replace(spec, dataset="sst2", split="dev"), store).info.run_id
        assert list(runs.catalogue(mine)["run_id"]) == [on_bundled, on_upload]
        label = runs.run_label(runs.catalogue(mine).iloc[1].to_dict())  # by its name, not its digest folder
        assert f"{on_upload} · minilm-sst2 · upload reviews.csv/all · 0/2" in label
        assert list(runs.catalogue()["run_id"]) == [on_bundled]  # another session
        renamed = save_upload("copy of reviews.csv", reviews.read_bytes())
        assert len(runs.catalogue((renamed,))) == 2  # the same bytes: the same data
        assert roar.stored_jobs() == []
        for session, shown in ((at, on_upload), (sidebar(), on_bundled)):  # a link to the run on the upload
            session.query_params["run"] = on_upload
            session.switch_page("app_pages/explorer.py").run()
            assert not session.exception and session.session_state["explorer.run"] == shown
        linked = sidebar({"dataset": mine[0]})  # a link to the data gives its texts, and so its runs
        assert linked.session_state["uploads.mine"] == (mine[0],)
        linked.query_params["run"] = on_upload
        linked.switch_page("app_pages/explorer.py").run()
        assert not linked.exception and linked.session_state["explorer.run"] == on_upload
        assert sidebar({"dataset": f"file:{reviews}"}).session_state.get("uploads.mine", ()) == ()  # no upload
    finally:
        access.policy.clear()
    monkeypatch.delenv(access.SHARED_ENV)
    assert len(runs.catalogue()) == 2  # a private server lists every run
    access.policy.clear()


def slice_table(at: AppTest, page: str):
    """The summary table of ``page``'s dataset slice, all three rows, run on two methods."""
    at.switch_page(f"app_pages/{page}.py")
    at.session_state[f"{page}.methods"] = ["loo_empty", "random"]
    at.run()
    at.segmented_control(key=f"{page}.view").set_value("Dataset slice").run()
    at.number_input(key=f"{page}.slice_n").set_value(3).run()
    at.button(key=f"{page}.slice_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.exception]
    return at.dataframe[0].value


def test_the_slice_views_run_on_a_data_file(tmp_path):
    """The faithfulness slice over the file's rows, and the rationales slice against the
    annotators' spans in its rationale column."""
    path = json_lines(
        tmp_path,
        '{"text": "A wonderful, moving film.", "label": 1, "rationale": [[2, 11]]}',
        '{"text": "Dull, slow and far too long.", "label": 0, "rationale": [[0, 4], [6, 10]]}',
        '{"text": "It was fine.", "label": 1}',
    )
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.query_params.update({"model": "minilm-sst2", "dataset": f"file:{path}", "methods": "random"})
    assert list(slice_table(at, "faithfulness")["n"]) == [3, 3]
    table = slice_table(at, "rationales")
    assert set(table["n"]) == {2} and set(table["skipped"]) == {1}  # the third row has no rationale
    # The file edited: the old numbers were shown without a click (the slice was keyed by name)
    path.write_text(path.read_text().replace('"label": 1}', '"label": 1, "rationale": [[7, 11]]}'))
    at.run()
    assert any("Press **Run on the slice**" in i.value for i in at.info)
    at.button(key="rationales.slice_run").click().run()
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    assert set(table["n"]) == {3} and set(table["skipped"]) == {0}


def test_a_one_row_split_has_no_slice_scope(tmp_path):
    """Sanity checks and Adversarial offered "dataset slice" with a picker of 2 to 1 examples,
    which Streamlit refuses (StreamlitInvalidMinMaxError) on every run of the page."""
    one = tmp_path / "one.csv"
    pd.DataFrame({"text": ["A warm, funny film."], "label": [1]}).to_csv(one, index=False)
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.session_state["heatmaps.methods"] = []
    at.session_state["sanity.scope"] = "dataset slice"
    for key, value in {"sidebar.dataset": "data file", "sidebar.data_file": str(one)}.items():
        at.session_state[key] = value
    at.run()
    at.switch_page("app_pages/sanity_checks.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("has one example: it is run as this example" in i.value for i in at.info)
    assert not [n for n in at.number_input if n.key == "sanity.n_examples"]


def test_cells_keep_what_they_say_and_parquet_keeps_its_class_names(tmp_path):
    """A CSV's "None", "NA" or "null" is text, not a missing cell; true/false labels are the
    classes false, true; a digit Python reads but ``int`` does not is a class name; a
    Parquet file's ClassLabel names number its classes as the CSV and the API read them."""
    import datasets

    import api

    words = tmp_path / "words.csv"
    words.write_text("text,label\nNA,None\nnull,NA\nfine,None\n")
    examples = load_examples(f"file:{words}", "all")
    assert [e.words for e in examples] == [("NA",), ("null",), ("fine",)]
    assert [e.label for e in examples] == [1, 0, 1] and examples[0].label_names == ("NA", "None")
    flags = tmp_path / "flags.csv"
    flags.write_text("text,label\ngood,true\nbad,false\nmeh,\n")
    examples = load_examples(f"file:{flags}", "all")
    assert [e.label for e in examples] == [1, 0, None] and examples[0].label_names == ("false", "true")
    squared = tmp_path / "squared.csv"
    squared.write_text("text,label\ngood,\u00b2\n")
    [squared_example] = load_examples(f"file:{squared}", "all")  # a class name, not a number int() refuses
    assert (squared_example.label, squared_example.label_names) == (0, ("\u00b2",))

    table = datasets.Dataset.from_dict(
        {"text": ["great", "awful"], "label": [0, 1]},
        features=datasets.Features(
            {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["positive", "negative"])}
        ),
    )
    table.to_parquet(tmp_path / "named.parquet")
    [great, awful] = load_examples(f"file:{tmp_path / 'named.parquet'}", "all")
    assert great.label_names == ("positive", "negative") and (great.label, awful.label) == (0, 1)
    with pytest.raises(ValueError, match="text_column, text_pair_column and label_column are for a Dataset"):
        api.evaluate("minilm-sst2", f"file:{words}", text_column="review", methods=["random"])


def test_an_upload_being_written_is_not_offered(reviews, monkeypatch, tmp_path):
    from services.uploads import kept_uploads, save_upload

    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path / "results"))
    name = save_upload("reviews.csv", reviews.read_bytes())
    folder = Path(name.removeprefix("file:")).parent
    (folder / f".reviews.csv.{os.getpid()}.0a1b2c3d.tmp").write_bytes(b"text,label\n")  # half written
    assert [upload.name for upload in kept_uploads(())] == [name]
