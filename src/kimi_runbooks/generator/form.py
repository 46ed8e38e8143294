"""The command generator: a plan with its performance-model prediction, as text and as a form.

It sits above both the planner and the performance model (each imports neither this nor the other's
views), so `plan` never reaches into `perfmodel`.
"""

from __future__ import annotations

import html
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..catalog import Catalog, load_catalog
from ..perfmodel import PredictSpecError, format_predictions, parse_predict_spec, predict, published_for_plan_text
from ..plan import DEFAULT_SGLANG_VERSION, EXAMPLE_PLATFORM, PlanConfig, plan, plan_text
from ..plan.view import readable_error

DEFAULT_PREDICT = "in=1000,out=1000,c=1,16,64"
"""The scenarios the command generator predicts until the user types others (--predict syntax)."""

NOTEBOOK_KNOBS = (
    "platform",
    "model",
    "devices",
    "tp",
    "dp",
    "ep",
    "enable_dp_attention",
    "kv_cache_dtype",
    "context_length",
    "speculative",
    "sglang_version",
)
"""The PlanConfig knobs the command generator notebook takes as parameters (the form offers the same)."""


class GeneratorOptions(BaseModel):
    """The command generator notebook's own parameter (beside NOTEBOOK_KNOBS)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    predict: str | None = None
    """Scenarios in kimi-runbooks plan --predict syntax; None: DEFAULT_PREDICT; "": none."""


def predicted_text(config: dict[str, Any] | PlanConfig, spec: str = DEFAULT_PREDICT) -> str:
    """`kimi-runbooks plan --predict SPEC` as text: the performance model's prediction for the plan
    of `config`, every figure labelled PREDICTED; a bad spec or an invalid plan says why instead."""
    try:
        scenarios = parse_predict_spec(spec)
    except PredictSpecError as exc:
        return f"## predicted speed: not predicted: {exc}"
    try:
        launch = plan(config)
    except (ValueError, KeyError) as exc:
        return f"## predicted speed: not predicted: {readable_error(exc)}"
    if not launch.ok:
        return "## predicted speed: not predicted, the plan is invalid"
    try:
        return format_predictions(predict(launch, scenarios)) + published_for_plan_text(launch)
    except ValueError as exc:  # perfmodel.geometry.NoPerformanceModelError: e.g. a hybrid model
        return f"## predicted speed: not predicted: {exc}"


def command_generator(catalog: Catalog | None = None) -> Any:
    """An ipywidgets form (platform, model, devices per node, TP/DP/EP, DP attention, EAGLE3, parsers, KV dtype,
    context length) that re-plans on every change and shows command, docker form, memory and
    validation errors inline, then the predicted speed for the `predict` scenarios (predicted_text)."""
    import ipywidgets as w

    catalog = catalog or load_catalog()
    platform = w.Dropdown(options=sorted(catalog.platforms), value=EXAMPLE_PLATFORM, description="platform")
    model = w.Dropdown(options=["(recipe default)", *sorted(catalog.models)], description="model")
    devices = w.BoundedIntText(value=0, min=0, max=64, description="devices/node (0=as shipped)")
    tp = w.BoundedIntText(value=0, min=0, max=64, description="tp (0=default)")
    dp = w.BoundedIntText(value=0, min=0, max=64, description="dp (0=none)")
    ep = w.BoundedIntText(value=0, min=0, max=64, description="ep (0=none)")
    dp_attn = w.Checkbox(value=False, description="DP attention")
    speculative = w.Checkbox(value=False, description="EAGLE3")
    parsers = w.Checkbox(value=True, description="reasoning + tool parsers")
    kv = w.Dropdown(options=["(default)", "auto", "fp8_e4m3", "bf16"], description="KV dtype")
    strategy = w.Dropdown(
        options=["(cookbook default)", "low-latency", "balanced", "high-throughput"], description="strategy"
    )
    ctx = w.BoundedIntText(value=0, min=0, max=1_000_000, description="context (0=model)")
    version = w.Text(value=DEFAULT_SGLANG_VERSION, description="SGLang")
    spec = w.Text(value=DEFAULT_PREDICT, description="predict")
    # An HTML widget the kernel rewrites, not an Output widget: under papermill, nbclient mimics an
    # Output widget by sending comm messages to the kernel on the shell channel while it waits for the
    # cell's reply, and about one headless run in 45 then never saw the cell finish (measured here;
    # jupyter/nbclient issue 312, PR 311).
    out = w.HTML()
    controls = [platform, model, devices, tp, dp, ep, dp_attn, speculative, parsers, kv, strategy, ctx, version, spec]

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
        if strategy.value != "(cookbook default)":
            config["strategy"] = strategy.value
        if not parsers.value:
            config["reasoning_parser"] = config["tool_call_parser"] = None
        text = plan_text(config)
        if spec.value.strip():
            text += "\n\n" + predicted_text(config, spec.value)
        out.value = f"<pre>{html.escape(text)}</pre>"

    for control in controls:
        control.observe(refresh, names="value")
    refresh()
    return w.VBox([w.HBox(controls[:4]), w.HBox(controls[4:8]), w.HBox(controls[8:]), out])
