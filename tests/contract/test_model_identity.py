"""/model_info's model_type and architectures, per served model, against SGLang 0.5.23's own code: the
emulator reports each params/models entry's hf_model_type / hf_architectures, and SGLang must have a
config class declaring that model_type and a model class (EntryClass) of each architecture."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from conftest import run_in_bench_env
from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.emulator.cli import parse_settings
from kimi_runbooks.emulator.testing import emulator_server


def test_every_model_identity_the_emulator_reports_is_one_sglang_serves(bench_python: str, tmp_path: Path) -> None:
    pairs = []
    for model in load_catalog().models.values():
        settings, _ = parse_settings(["--model", model.served_name, "--model-path", model.hf_id])
        with emulator_server(settings, log_startup=False) as url:
            info = httpx.get(url + "/model_info").json()
        assert info["model_type"] == model.hf_model_type and info["architectures"] == model.hf_architectures
        pairs.append({"model": model.id, "model_type": info["model_type"], "architectures": info["architectures"]})
    source = tmp_path / "pairs.json"
    source.write_text(json.dumps(pairs))
    report = run_in_bench_env(bench_python, "model_identity_check.py", source, report=tmp_path / "report.json")
    unknown = [r for r in report if not r["config"] or not all(r["architectures"].values())]
    assert unknown == []
    k3 = next(r for r in report if r["model"] == "kimi-k3")
    assert k3["config"].startswith("srt/configs/kimi_k3.py")
    assert k3["architectures"] == {"KimiK3ForConditionalGeneration": "srt/models/kimi_k3.py"}
