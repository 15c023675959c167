"""Serving safely: shared mode's allow-list and password, one message for every refused model,
load errors that name what was typed once and hide host paths, damaged weight files."""

from __future__ import annotations

import struct

import pytest

import services
from core.loaded import load_classifier
from services import access
from services.models import load_error_message
from tests.toy import toy_bert


@pytest.fixture
def shared(monkeypatch):
    """Shared mode with one extra allowed model and a password, for one test."""
    monkeypatch.setenv(access.SHARED_ENV, "1")
    monkeypatch.setenv(access.MODELS_ENV, "some-org/extra-model, ")
    monkeypatch.setenv(access.PASSWORD_ENV, "s3cret")
    access.policy.clear()
    yield access.policy()
    access.policy.clear()


def test_private_mode_allows_everything() -> None:
    policy = access.policy_from_env({})
    assert not policy.shared and policy.refusal("/etc") is None and policy.password is None


def test_shared_mode_offers_only_the_allow_list(shared) -> None:
    assert shared.shared and "minilm-sst2" in shared.allowed_models and "some-org/extra-model" in shared.allowed_models
    names = [c.name for c in services.model_choices()]
    assert "minilm-sst2" in names and "some-org/extra-model" in names
    assert all(name in shared.allowed_models for name in names)
    assert set(services.mlm_choices()) <= set(shared.allowed_models)


def test_refused_models_get_one_message_whether_or_not_they_exist(shared) -> None:
    messages = []
    for name in ("/etc", "/nonexistent", "/root", "textattack/bert-base-uncased-SST-2"):
        with pytest.raises(ValueError) as info:
            services.models.loaded(name)
        messages.append(str(info.value).replace(repr(name), "NAME"))
    assert len(set(messages)) == 1 and "not offered on this server" in messages[0]
    assert services.models.loaded("minilm-sst2").name == "minilm-sst2"


def test_password_is_compared_exactly(shared) -> None:
    assert access.password_matches("s3cret")
    assert not access.password_matches("s3cret ") and not access.password_matches("")


def test_load_errors_are_wrapped_once_and_hide_host_paths() -> None:
    prefix = "cannot load '/x' as a sequence classifier: "
    assert load_error_message("/x", ValueError(prefix + prefix + "boom")) == prefix + "boom"
    hidden = load_error_message("m", OSError("no config at /root/.cache/huggingface/hub/m, see https://hf.co/docs"))
    assert "/root" not in hidden and "<path>" in hidden and "https://hf.co/docs" in hidden
    assert hidden.startswith("cannot load 'm' as a sequence classifier: OSError:")
    for typed in ("~/models/my-model", "<b>bold</b>", "models/x"):  # shown as typed, host paths still hidden
        message = load_error_message(typed, OSError(f"'{typed}': no such folder; looked in /home/me/models"))
        assert message.count(typed) == 2 and "/home/me" not in message and message.endswith("looked in <path>")


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"",  # empty
        lambda data: data[:5],  # header too small
        lambda data: struct.pack("<Q", 10**12) + data[8:100],  # invalid header length
        lambda data: data[:64],  # incomplete metadata
    ],
    ids=["empty", "too-small", "bad-length", "truncated-header"],
)
def test_damaged_weights_file_gives_one_clear_error(tmp_path, damage) -> None:
    loaded = toy_bert()
    loaded.model.save_pretrained(tmp_path)
    loaded.tokenizer.save_pretrained(tmp_path)
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(damage(weights.read_bytes()))
    with pytest.raises(ValueError, match="the weights file is damaged") as info:
        load_classifier(str(tmp_path))
    message = str(info.value)
    assert message.count("cannot load") == 1 and "\n" not in message


def test_the_shared_queue_runs_one_long_request_per_session_and_bounds_the_server() -> None:
    import threading
    import time

    queue = access.HeavyQueue(slots=1)
    with queue.slot("alice"):
        with pytest.raises(ValueError, match="already running"), queue.slot("alice"):
            pass
        order: list[str] = []

        def bob() -> None:
            with queue.slot("bob", waiting=lambda: order.append("bob waits")):
                order.append("bob")

        waiting = threading.Thread(target=bob)
        waiting.start()
        time.sleep(0.2)
        assert order == ["bob waits"]  # the one slot is alice's: bob is told, and waits his turn
        order.append("alice done")
    waiting.join(timeout=5)
    assert order == ["bob waits", "alice done", "bob"]
    with queue.slot("alice", waiting=lambda: order.append("alice waits")):  # a free slot: no wait
        pass
    assert order[-1] == "bob"


def test_a_tokenizer_of_another_model_gives_one_clear_error(tmp_path) -> None:
    """A folder saved with another model's tokenizer (ids past the model's embeddings) is refused
    at load in one line, not by an IndexError in the first pass; the same pair handed over as
    objects is refused too, and so is such a masked LM."""
    from core.loaded import classifier_from_model
    from core.masked_lm import MaskedLM
    from core.models import encoder_path, load_tokenizer
    from tests.toy import save_toy_masked_lm

    loaded = toy_bert()
    other = load_tokenizer(encoder_path())  # the packaged encoder's 30,522-token vocabulary
    loaded.model.save_pretrained(tmp_path / "clf")
    other.save_pretrained(tmp_path / "clf")
    with pytest.raises(ValueError, match="ids up to 30521 but the model embeds only 36 tokens") as info:
        load_classifier(str(tmp_path / "clf"))
    assert str(info.value).count("cannot load") == 1 and "\n" not in str(info.value)
    with pytest.raises(ValueError, match="'toy': its tokenizer gives token ids up to 30521"):
        classifier_from_model(loaded.model, other, name="toy")
    save_toy_masked_lm(tmp_path / "mlm")
    other.save_pretrained(tmp_path / "mlm")
    with pytest.raises(ValueError, match="as a masked language model: its tokenizer gives token ids up to 30521"):
        MaskedLM.load(str(tmp_path / "mlm"))


def test_tokens_added_on_top_of_the_vocabulary_do_not_refuse_a_model() -> None:
    """A tokenizer with a token added after training and never embedded still loads: only a text
    that holds the token would need it."""
    from core.loaded import classifier_from_model

    loaded = toy_bert()
    tokenizer = loaded.tokenizer
    tokenizer.add_tokens(["[NEW]"])
    assert tokenizer.convert_tokens_to_ids("[NEW]") >= loaded.model.get_input_embeddings().num_embeddings
    assert classifier_from_model(loaded.model, tokenizer, name="toy").tokenizer is tokenizer
