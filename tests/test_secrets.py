"""Redaction replaces credentials, not ordinary values that happen to live in KEY/TOKEN variables."""

from kimi_runbooks.secrets import REDACTED, redact


def test_named_key_and_credential_like_names_are_redacted(monkeypatch):
    monkeypatch.setenv("MY_RUN_KEY_VAR", "abcd")  # named explicitly: redacted even when short
    monkeypatch.setenv("HF_TOKEN", "hf_0123456789abcdef")
    text = "--api-key abcd and hf_0123456789abcdef"
    assert redact(text, ["MY_RUN_KEY_VAR"]) == f"--api-key {REDACTED} and {REDACTED}"


def test_ordinary_values_survive(monkeypatch):
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setenv("MAX_TOKENS", "1024")
    monkeypatch.setenv("SORT_KEY", "name")  # looks like a key, but too short to be a credential
    text = "--enable-metrics false --max-running-requests 1024 --sort name"
    assert redact(text) == text


def test_secret_fields_in_structures_and_explicit_environ():
    doc = {"server_info": {"api_key": "whatever-value", "tp_size": 8}, "log": ["key=s3cr3t-value-x"]}
    out = redact(doc, ["KIMI_KEY"], environ={"KIMI_KEY": "s3cr3t-value-x"})
    assert out["server_info"] == {"api_key": REDACTED, "tp_size": 8}
    assert out["log"] == [f"key={REDACTED}"]
