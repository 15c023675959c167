from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from core.classifier import Classifier
from core.types import Example
from tests.toy import save_toy_masked_lm, toy_bert, toy_linear, toy_tokenizer

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# What the commands and pages keep in the results folder (runs, AML's pre-trained models) goes to
# a folder of this test session's, never to the checkout's ./results, removed when the session ends
# (each session left about 90 MB in /tmp).
if "ATTRIBUTION_RESULTS_DIR" not in os.environ:
    os.environ["ATTRIBUTION_RESULTS_DIR"] = tempfile.mkdtemp(prefix="attribution-test-results-")
    atexit.register(shutil.rmtree, os.environ["ATTRIBUTION_RESULTS_DIR"], ignore_errors=True)
# A shell starts its background jobs (`make test &`, `nohup ... &`) with Ctrl-C ignored, and the
# commands the tests start would inherit that: the Ctrl-C tests then saw a command run to its end.
# The tests run with Python's own handler, as in a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def toy_linear_loaded():
    return toy_linear()


@pytest.fixture(scope="session")
def toy_bert_loaded():
    return toy_bert()


@pytest.fixture
def linear_clf(toy_linear_loaded) -> Classifier:
    return Classifier(toy_linear_loaded)


@pytest.fixture
def bert_clf(toy_bert_loaded) -> Classifier:
    return Classifier(toy_bert_loaded)


@pytest.fixture
def toy_example() -> Example:
    return Example(segments=(("the", "movie", "was", "great", "but", "the", "plot", "was", "bad", "."),), id="toy/0")


@pytest.fixture(scope="session")
def toy_bert_folder(tmp_path_factory) -> str:
    """The tiny BERT classifier (``toy_bert()``) saved as a local folder, for the CLI and the app."""
    folder = tmp_path_factory.mktemp("toy-bert")
    loaded = toy_bert()
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory) -> tuple[Path, Path]:
    """A tiny BERT classifier and masked LM saved as local folders (clf, mlm)."""
    root = tmp_path_factory.mktemp("models")
    loaded = toy_bert(seed=2)
    loaded.model.save_pretrained(root / "clf")
    toy_tokenizer().save_pretrained(root / "clf")
    save_toy_masked_lm(root / "mlm", seed=3)
    return root / "clf", root / "mlm"


@pytest.fixture
def started(monkeypatch) -> list:
    """The background processes the app starts while the test runs (none really: each is a
    ``tests.fake_processes.Process``), with the server's record of them cleared."""
    import subprocess

    import services
    from tests.fake_processes import Process

    processes: list[Process] = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: processes.append(Process(*a, **k)) or processes[-1])
    services.background.background.clear()
    yield processes
    services.background.background.clear()
