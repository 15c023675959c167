"""Issue 25 item 4: a Ray cluster's credentials (Ray's ``RAY_AUTH_TOKEN`` and the user and
password of a ``--address``) never reach a run's stored parameters, its stored error, the files
of the run store, ``show``'s JSON, a run exported as Parquet, a session bundle, or the command
line's error line, even when Ray's own error message carries them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from cli.main import main
from engine.runs import ray_executor
from engine.runs.executor import execute, open_run
from engine.runs.secrets import redact
from engine.runs.spec import RunSpec
from engine.runs.store import RunStore

TOKEN = "tok-SECRET-8f3a"
PASSWORD = "pw-SECRET-77"
ADDRESS = f"ray://alice:{PASSWORD}@127.0.0.1:10001"


@pytest.fixture
def credentials(monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN", TOKEN)

    def leaky_init(address):  # what a connection error of Ray's may say
        raise ConnectionError(f"cannot reach {address} (auth token {TOKEN}): connection refused")

    monkeypatch.setattr(ray_executor, "_ray_init", leaky_init)


def no_secret_in(data: bytes | str, where: str) -> None:
    raw = data.encode() if isinstance(data, str) else data
    for secret in (TOKEN, PASSWORD):
        assert secret.encode() not in raw, f"{secret} found in {where}"


def test_redact_removes_user_information_and_the_token(credentials) -> None:
    assert redact(f"failed: {ADDRESS} token={TOKEN}") == "failed: ray://***@127.0.0.1:10001 token=***"
    assert redact("http://bob:hunter22@host:8265/api", None) == "http://***@host:8265/api"


def test_no_credential_reaches_the_store_show_exports_or_the_error_line(credentials, toy_bert_folder, tmp_path,
                                                                      capsys, monkeypatch) -> None:  # fmt: skip
    store = RunStore(tmp_path)
    spec = RunSpec(model=toy_bert_folder, dataset="examples", split="sst2", limit=2, methods=("random",),
                   metrics=("deletion",), chunk_size=1)  # fmt: skip
    done = execute(open_run(spec, store), store, executor="serial", address=ADDRESS).info
    failing = RunSpec(model=toy_bert_folder, dataset="examples", split="sst2", limit=3, methods=("random",),
                      metrics=("deletion",), chunk_size=1)  # fmt: skip
    with pytest.raises(ConnectionError):
        execute(open_run(failing, store), store, executor="ray", address=ADDRESS)
    failed = next(i for i in store.infos() if i.status == "failed")
    assert failed.error.startswith("ConnectionError: cannot reach ray://***@127.0.0.1:10001 (auth token ***)")
    # the command line: its error line (past the reachability check, which tests/test_ray_address.py
    # covers, so that Ray's own leaky message is the one printed), then what show / runs print
    monkeypatch.setattr(ray_executor, "check_reachable", lambda address: None)
    code = main(["run", "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "4",
                 "--methods", "random", "--metrics", "deletion", "--executor", "ray", "--address", ADDRESS,
                 "--results-dir", str(tmp_path), "--quiet"])  # fmt: skip
    assert code == 2
    printed = capsys.readouterr()
    assert "cannot reach ray://***@" in printed.err
    no_secret_in(printed.out + printed.err, "the error line")
    for run_id in (done.run_id, failed.run_id):
        shown_status = main(["show", run_id, "--results-dir", str(tmp_path), "--json", "--per-example"])
        assert shown_status == (1 if run_id == failed.run_id else 0)  # a failed run that stored nothing: 1
    assert main(["runs", "--results-dir", str(tmp_path), "--json"]) == 0
    shown = capsys.readouterr()
    no_secret_in(shown.out + shown.err, "show and runs")
    # every file of the run store: catalogue, unit Parquet files, logs
    for path in Path(tmp_path).rglob("*"):
        if path.is_file():
            no_secret_in(path.read_bytes(), str(path))
    # the run exported as Parquet (the explorer's table download) and as a session bundle
    from ui.export import table_bytes

    no_secret_in(table_bytes(store.rows(done.run_id), "parquet"), "the run's Parquet export")
    from services.bundles import bundle_bytes

    buffer = io.BytesIO(bundle_bytes(toy_bert_folder, {"dataset": "examples"}, {}, _heatmap(store, done.run_id), dict))
    no_secret_in(buffer.getvalue(), "a session bundle")
    for info in store.infos():
        no_secret_in(json.dumps([info.params, info.overrides, info.selection, info.executor]), "stored parameters")


def _heatmap(store: RunStore, run_id: str):
    from services.explain import HeatmapResult, PredictionResult

    info = store.get(run_id)
    example, attributions = store.example(run_id, 0)
    row = store.rows(run_id).iloc[0]
    probabilities = tuple(float(p) for p in row["probabilities"])
    prediction = PredictionResult(example, probabilities, int(max(range(2), key=probabilities.__getitem__)),
                                  info.label_names, 0)  # fmt: skip
    return HeatmapResult(prediction, int(row["target"]), attributions)
