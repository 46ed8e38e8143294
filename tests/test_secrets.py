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


# --------------------------------------------------------------------------- issue 13, case 9


def test_a_configured_key_is_never_skipped_however_short(monkeypatch):
    monkeypatch.setenv("SHORT_RUN_KEY", "ab")
    assert redact("key=ab; tab", ["SHORT_RUN_KEY"]) == f"key={REDACTED}; t{REDACTED}"


def test_a_short_key_is_refused_at_start_with_the_fix(monkeypatch, tmp_path):
    import pytest

    from kimi_runbooks import runbook
    from kimi_runbooks.rundir import RunFolder
    from kimi_runbooks.secrets import MIN_KEY_LENGTH, SecretError, require_redactable

    monkeypatch.setenv("SHORT_RUN_KEY", "ab")
    with pytest.raises(SecretError, match=r"2 characters.*openssl rand"):
        require_redactable("SHORT_RUN_KEY")
    with pytest.raises(SecretError):
        RunFolder.create(tmp_path / "run", secret_envs=["SHORT_RUN_KEY"])
    with pytest.raises(runbook.PlanInvalid, match="SHORT_RUN_KEY is 2 characters"):
        runbook.run_runbook({"platform": "h200", "api_key_env": "SHORT_RUN_KEY", "run_dir": str(tmp_path / "r2")})
    assert not (tmp_path / "r2").exists()  # refused before the run folder was made
    monkeypatch.setenv("SHORT_RUN_KEY", "x" * MIN_KEY_LENGTH)
    require_redactable("SHORT_RUN_KEY")


def test_html_is_redacted_in_every_byte_with_a_marker_valid_where_it_stands():
    """Issue 25 item 4 (replaces issue 13's text-only rule, which left keys in <script> and attributes):
    text, attributes, comments, styles and scripts are all redacted; a script's JSON still parses."""
    import json

    from kimi_runbooks.secrets import REDACTED_CODE, REDACTED_HTML, redact_html

    key = "sk/dataframe<9>"
    doc = json.dumps({"title": key, "hovertext": [f"run {key}"]})
    plotly_doc = doc.replace("<", "\\u003c").replace(">", "\\u003e").replace("/", "\\u002f")  # plotly's escapes
    page = (
        f'<table class="dataframe" title="{html_escape(key)}"><tr><td>{html_escape(key)}</td></tr></table>'
        f"<!-- {key} --><style>.x::after{{content:'{key}'}}</style>"
        f'<script type="application/json" id="a">{doc}</script><script>Plotly.newPlot("d", {plotly_doc});</script>'
    )
    out = redact_html(page, ["WORD_KEY"], environ={"WORD_KEY": key})
    for form in (key, html_escape(key), "sk\\u002fdataframe", "dataframe\\u003c9"):
        assert form not in out, form
    assert f'title="{REDACTED_HTML}"' in out and f"<td>{REDACTED_HTML}</td>" in out
    assert out.count("<table") == out.count("</table>") == 1 and out.count("<script") == out.count("</script>") == 2
    embedded = out.split('id="a">')[1].split("</script>")[0]
    assert json.loads(embedded) == {"title": REDACTED_CODE, "hovertext": [f"run {REDACTED_CODE}"]}
    plotted = out.split('Plotly.newPlot("d", ')[1].split(");</script>")[0]
    assert json.loads(plotted)["title"] == REDACTED_CODE
    assert REDACTED_HTML == "&lt;redacted&gt;"


def html_escape(text: str) -> str:
    import html

    return html.escape(text)


def test_json_escaped_keys_in_plain_text_are_redacted_and_the_json_stays_valid():
    import json

    key = 'quote"and\\slash/key'
    text = json.dumps({"log": f"sent {key}"})
    out = redact(text, ["K"], environ={"K": key})
    assert key not in out and json.dumps(key)[1:-1] not in out
    assert json.loads(out) == {"log": f"sent {REDACTED}"}


def test_a_notebook_html_output_keeps_its_structure(monkeypatch):
    from kimi_runbooks.secrets import redact_notebook

    nb = {
        "cells": [
            {
                "source": "print('dataframe')",
                "outputs": [
                    {"data": {"text/html": ['<table class="dataframe">\n', "<td>dataframe</td></table>"]}},
                    {"text": "dataframe\n"},
                ],
            }
        ]
    }
    monkeypatch.setenv("WORD_KEY", "dataframe")
    out = redact_notebook(nb, ["WORD_KEY"])
    cell = out["cells"][0]
    assert cell["source"] == f"print('{REDACTED}')"
    html_out = "".join(cell["outputs"][0]["data"]["text/html"])
    assert html_out == '<table class="&lt;redacted&gt;">\n<td>&lt;redacted&gt;</td></table>'
    assert cell["outputs"][1]["text"] == f"{REDACTED}\n"
