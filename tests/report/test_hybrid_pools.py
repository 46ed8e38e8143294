"""The report shows a hybrid model's two memory pools and the capacity levers from the plan."""

from __future__ import annotations

from kimi_runbooks.plan import plan
from kimi_runbooks.report.plan_section import pools_section


def test_k3_report_shows_both_pools_and_the_levers() -> None:
    # Non-Spec: the state pool caps the batch (with DSPARK on, SGLang's 48 for speculation binds first)
    memory = plan({"platform": "b300", "model": "kimi-k3", "speculative": False}).as_dict()["memory"]
    html = pools_section(memory)
    pool = memory["state_pool"]
    assert "Two memory pools per device" in html
    assert "kda recurrent state (69 layers, float32)" in html and "MLA KV (bf16)" in html
    assert f"{pool['slots']} slots, 5 per request (extra_buffer)" in html
    assert f"{pool['kv_tokens']} tokens" in html and "(capped by the state pool)" in html
    assert "--mamba-radix-cache-strategy extra_buffer_lazy" in html and "--mamba-ssm-dtype bfloat16" in html


def test_pure_mla_report_has_no_pool_section() -> None:
    assert pools_section(plan({"platform": "h200"}).as_dict()["memory"]) == ""
