"""Show a launch plan: as text (CLI, headless notebooks) and as a live ipywidgets form.

The widget calls the same `plan.launch.plan` as the CLI, so what the form shows is exactly what a
runbook would launch.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from .catalog import Catalog, load_catalog
from .config import PlanConfig, validation_text
from .launch import plan
from .launch_plan import LaunchPlan


def format_plan(p: LaunchPlan) -> str:
    title = f"# {p.platform.name} / {p.model.id}" + (f" / {p.deployment.id}" if p.deployment else "")
    lines = [title, f"# SGLang {p.config.sglang_version} (selects which rules apply)"]
    if p.nodes:
        for node in p.nodes:
            lines += [f"\n## {node.role} node {node.node_rank}", node.command]
            if node.docker:
                lines += [f"\n## docker, {node.role} node {node.node_rank}", node.docker]
        if p.router:
            lines += ["\n## router", p.router.command]
    else:
        lines += ["\n## command", p.command]
    if p.docker:
        lines += ["\n## docker", p.docker]
    if p.device_env:
        pinned = ", ".join(f"{k}={v}" for k, v in p.device_env.items())
        lines.append(f"\n## devices: {p.devices_used} in use, pinned with {pinned}")
    lines.append("\n## memory per device (estimate until a live /server_info replaces it)")
    for key, value in p.memory.as_dict().items():
        if key != "notes" and not (key == "replicas" and value == 1):
            lines.append(f"  {key:<24} {value}")
    lines += [f"  note: {note}" for note in p.memory.notes]
    if p.warnings:
        lines.append("\n## warnings")
        lines += [f"  - {w}" for w in p.warnings]
    if p.version_changes:
        lines.append(f"\n## rules that differ from the default SGLang {p.version_changes[0].default_version}")
        lines += [f"  - {c}" for c in p.version_changes]
    lines.append("\n## verdict: " + ("VALID" if p.ok else f"INVALID ({len(p.errors)} errors)"))
    lines += [f"  - {e}" for e in p.errors]
    if p.alternatives:
        lines.append("\n## alternatives that use the idle devices")
        for alt in p.alternatives:
            lines.append(f"\n### {alt.title}: " + ("VALID" if alt.plan else "refused by " + ", ".join(alt.refused_by)))
            lines.append(f"  {alt.why}")
            if alt.plan is not None:
                mem = alt.plan.memory
                lines.append(
                    f"  memory per device: weights {mem.weights_gib_per_device:.1f} GiB, "
                    f"KV pool {mem.kv_budget_gib:.1f} GiB = {mem.kv_pool_tokens} tokens per pool, "
                    f"{mem.kv_pool_tokens_total} tokens over {mem.pools} pool(s)"
                )
                lines.append(alt.plan.command)
    return "\n".join(lines)


def format_rules(catalog: Catalog, sglang_version: str | None = None) -> str:
    """Every rule with its SGLang version range, scope and public source (`kimi-runbooks rules`)."""
    from .rules import parse_version

    lines = []
    for rule in catalog.rules:
        scope = rule.applies
        where = [
            f"{name}: {', '.join(values)}"
            for name, values in (
                ("vendors", scope.vendors),
                ("archs", scope.archs),
                ("platforms", scope.platforms),
                ("models", scope.models),
            )
            if values
        ]
        version = scope.sglang or "all versions"
        mark = ""
        if sglang_version and scope.sglang:
            from packaging.specifiers import SpecifierSet

            inside = SpecifierSet(scope.sglang).contains(parse_version(sglang_version), prereleases=True)
            mark = f" [{'applies' if inside else 'does not apply'} at {sglang_version}]"
        lines.append(
            f"{rule.id} ({rule.severity}, {rule.kind}) SGLang {version}{mark}"
            + (f"; {'; '.join(where)}" if where else "")
        )
        lines.append(f"  when: {rule.violation}")
        lines.append(f"  source: {rule.source}")
    return "\n".join(lines)


def plan_text(config: dict[str, Any] | PlanConfig) -> str:
    """The plan of `config` as text; an unknown id or bad value becomes a readable error line."""
    try:
        return format_plan(plan(config))
    except (ValueError, KeyError) as exc:  # pydantic ValidationError and UnknownIdError are ValueErrors
        return f"## verdict: INVALID\n  - {_readable(exc)}"


def _readable(exc: Exception) -> str:
    """A bad parameter as "field: what is wrong", not pydantic's multi-line banner and help URL."""
    return validation_text(exc) if isinstance(exc, ValidationError) else str(exc)


DEFAULT_PREDICT = "in=1000,out=1000,c=1,16,64"
"""The scenarios the command generator predicts until the user types others (--predict syntax)."""


def predicted_text(config: dict[str, Any] | PlanConfig, spec: str = DEFAULT_PREDICT) -> str:
    """`kimi-runbooks plan --predict SPEC` as text: the performance model's prediction for the plan
    of `config`, every figure labelled PREDICTED; a bad spec or an invalid plan says why instead."""
    from ..perfmodel import PredictSpecError, format_predictions, parse_predict_spec, predict

    try:
        scenarios = parse_predict_spec(spec)
    except PredictSpecError as exc:
        return f"## predicted speed: not predicted: {exc}"
    try:
        launch = plan(config)
    except (ValueError, KeyError) as exc:
        return f"## predicted speed: not predicted: {_readable(exc)}"
    if not launch.ok:
        return "## predicted speed: not predicted, the plan is invalid"
    return format_predictions(predict(launch, scenarios))


def command_generator(catalog: Catalog | None = None) -> Any:
    """An ipywidgets form (platform, model, devices per node, TP/DP/EP, DP attention, EAGLE3, parsers, KV dtype,
    context length) that re-plans on every change and shows command, docker form, memory and
    validation errors inline, then the predicted speed for the `predict` scenarios (predicted_text)."""
    import ipywidgets as w

    catalog = catalog or load_catalog()
    platform = w.Dropdown(options=sorted(catalog.platforms), value="h200", description="platform")
    model = w.Dropdown(options=["(recipe default)", *sorted(catalog.models)], description="model")
    devices = w.BoundedIntText(value=0, min=0, max=64, description="devices/node (0=as shipped)")
    tp = w.BoundedIntText(value=0, min=0, max=64, description="tp (0=default)")
    dp = w.BoundedIntText(value=0, min=0, max=64, description="dp (0=none)")
    ep = w.BoundedIntText(value=0, min=0, max=64, description="ep (0=none)")
    dp_attn = w.Checkbox(value=False, description="DP attention")
    speculative = w.Checkbox(value=False, description="EAGLE3")
    parsers = w.Checkbox(value=True, description="reasoning + tool parsers")
    kv = w.Dropdown(options=["(default)", "auto", "fp8_e4m3", "bf16"], description="KV dtype")
    ctx = w.BoundedIntText(value=0, min=0, max=1_000_000, description="context (0=model)")
    version = w.Text(value="0.5.9", description="SGLang")
    spec = w.Text(value=DEFAULT_PREDICT, description="predict")
    out = w.Output()
    controls = [platform, model, devices, tp, dp, ep, dp_attn, speculative, parsers, kv, ctx, version, spec]

    def refresh(*_: Any) -> None:
        config: dict[str, Any] = {
            "platform": platform.value,
            "sglang_version": version.value,
            "speculative": speculative.value,
        }
        if model.value != "(recipe default)":
            config["model"] = model.value
        for knob, widget in (("devices", devices), ("tp", tp), ("dp", dp), ("ep", ep), ("context_length", ctx)):
            if widget.value:
                config[knob] = widget.value
        if dp_attn.value:
            config["enable_dp_attention"] = True
        if kv.value != "(default)":
            config["kv_cache_dtype"] = kv.value
        if not parsers.value:
            config["reasoning_parser"] = config["tool_call_parser"] = None
        out.clear_output()
        with out:
            print(plan_text(config))
            if spec.value.strip():
                print("\n" + predicted_text(config, spec.value))

    for control in controls:
        control.observe(refresh, names="value")
    refresh()
    return w.VBox([w.HBox(controls[:4]), w.HBox(controls[4:8]), w.HBox(controls[8:]), out])
