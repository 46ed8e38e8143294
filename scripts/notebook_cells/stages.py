"""Cell lists of the stage notebooks and the command generator (scripts/make_notebooks.py writes them).

Each notebook is a list of (kind, text): "md", "code", "parameters" (papermill's tagged cell) or
"check" (an nbval-checked cell). Notebooks hold narrative and short calls; logic is in the package.
Parameters cells that take launch knobs are written from the option models (parameters.py), so no
default is typed here.
"""

from kimi_runbooks.accuracy import AccuracyOptions
from kimi_runbooks.deploy import DeployOptions
from kimi_runbooks.generator import NOTEBOOK_KNOBS, GeneratorOptions
from kimi_runbooks.invoke import InvokeOptions
from kimi_runbooks.plan import EXAMPLE_PLATFORM, PlanConfig
from kimi_runbooks.speed import SpeedStageOptions

from .parameters import field_lines

EXAMPLE = {"platform": (EXAMPLE_PLATFORM, "params/platforms id")}
"""The one knob without a default: the platform a notebook shows until one is chosen."""


def deploy_parameters() -> str:
    """The run folder, PlanConfig's knobs (used only where no plan is saved yet) and DeployOptions, with their defaults."""
    return "\n".join(
        [
            "from typing import Optional",
            "",
            "run_dir: Optional[str] = None  # the run folder; its plan.json (a runbook's) is the plan launched. None: a new one",
            "",
            "# Launch knobs (kimi_runbooks.plan.PlanConfig): planned once, only when run_dir holds no plan.json yet",
            "# (a runbook's deploy launches the plan the runbook saved there)",
            *field_lines(PlanConfig, EXAMPLE),
            "",
            "# Deploy options (kimi_runbooks.deploy.DeployOptions)",
            *field_lines(DeployOptions),
        ]
    )


def invoke_parameters() -> str:
    """The run folder and InvokeOptions, with their defaults."""
    return "\n".join(
        [
            "from typing import Optional",
            "",
            "run_dir: Optional[str] = None  # run folder holding the deploy stage's handle.json; None: a new one",
            "",
            "# Invoke options (kimi_runbooks.invoke.InvokeOptions)",
            *field_lines(InvokeOptions),
        ]
    )


def speed_parameters() -> str:
    """The run folder and SpeedStageOptions, with their defaults."""
    return "\n".join(
        [
            "from typing import Optional",
            "",
            'run_dir: str = "outputs/speed-bench"  # the run folder: the deploy stage\'s handle.json, bench.jsonl written here',
            "",
            "# Speed options (kimi_runbooks.speed.SpeedStageOptions)",
            *field_lines(SpeedStageOptions),
        ]
    )


def accuracy_parameters() -> str:
    """The run folder and AccuracyOptions, with their defaults."""
    return "\n".join(
        [
            "from typing import Optional",
            "",
            'run_dir: str = "outputs/accuracy"  # the run folder: the deploy stage\'s handle.json, accuracy.jsonl written here',
            "",
            "# Accuracy options (kimi_runbooks.accuracy.AccuracyOptions)",
            *field_lines(AccuracyOptions),
        ]
    )


def generator_parameters() -> str:
    """The command generator's knobs (generator.NOTEBOOK_KNOBS of PlanConfig) and GeneratorOptions."""
    return "\n".join(
        [
            "from typing import Optional",
            "",
            "# Launch knobs (kimi_runbooks.plan.PlanConfig)",
            *field_lines(PlanConfig, EXAMPLE, NOTEBOOK_KNOBS),
            "",
            "# kimi_runbooks.generator.GeneratorOptions",
            *field_lines(GeneratorOptions),
        ]
    )


DEPLOY = [
    (
        "md",
        """
# Deploy: launch the server, wait until it is ready, record what ran

Launches the run's one plan: the plan a runbook made, validated and saved in the run folder
(`plan.json`), loaded as it is; run on its own, this notebook plans once from the knobs below and
saves that plan in its run folder first. It refuses to start anything while the plan has errors,
runs the preflight checks (accelerators, free memory, port, model path, /dev/shm, docker), launches
with the chosen launcher, shows the start-up phase while waiting, and writes `handle.json` and
`manifest.json` into the run folder for the later stages.

`launcher="emulator"` (the default) runs the project's SGLang emulator on a free port: every number
it produces is **EMULATED**. Use `local`, `docker`, `slurm` or `multi-node` on real hardware, `external`
with `base_url` to attach to a server someone else runs. The API key, if any, is read from the
environment variable named by `api_key_env`; it is never written to the run folder.
""",
    ),
    ("parameters", deploy_parameters()),
    (
        "md",
        """
## The plan and its validation verdict
""",
    ),
    (
        "code",
        """
from kimi_runbooks import deploy
from kimi_runbooks.plan import PlanConfig, format_plan
from kimi_runbooks.rundir import RunFolder

options = deploy.DeployOptions(**{name: globals()[name] for name in deploy.DeployOptions.model_fields})
# the one conversion of run_dir (nothing is created yet: an invalid plan writes nothing)
folder = RunFolder.of(run_dir, secret_envs=[api_key_env]) if run_dir else None
# the plan saved in the run folder (a runbook's); none there: planned once from the knobs and saved first
folder, plan = deploy.plan_for_run(folder, {name: globals()[name] for name in PlanConfig.model_fields})
if launcher == "external":  # nothing is launched: no command, no memory plan of ours applies
    print(f"external server at {base_url}: nothing is launched; served model {plan.served_name!r}")
else:
    print(format_plan(plan))
deploy.require_valid(plan)  # stops here, before anything starts, when the plan has errors
""",
    ),
    (
        "md",
        """
## Memory per device (an estimate until the live `/server_info` replaces it)
""",
    ),
    (
        "code",
        """
from IPython.display import display

if launcher != "external":  # pandas only here and after a launch: a failing external run skips its import
    import pandas as pd

    display(pd.DataFrame([{k: v for k, v in plan.memory.as_dict().items() if k != "notes"}]).T.rename(columns={0: "estimate"}))
""",
    ),
    (
        "md",
        """
## Launch, readiness, then keep running or tear down

The start-up phase is read from the server log; a server that exits early is diagnosed at once.
With `keep_running` the server stays up for later stages; otherwise it is stopped once recorded.
""",
    ),
    (
        "code",
        """
# the saved plan launched; handle.json and manifest.json written once ready; then left up (keep_running) or stopped
handle = deploy.run(folder, options)
""",
    ),
    (
        "md",
        """
## Server summary (from `/server_info`)
""",
    ),
    (
        "code",
        """
import pandas as pd

summary = handle.summary()
if summary["emulated"]:
    print("EMULATED server: numbers below come from the emulator, not from hardware")
pd.Series(summary, name="value").to_frame()
""",
    ),
    (
        "md",
        """
## Handle and manifest

`deploy.run` wrote both when the server became ready; later stages read `handle.json`.
""",
    ),
    (
        "code",
        """
import json

print((handle.run_dir / "handle.json").read_text())
manifest = json.loads((handle.run_dir / "manifest.json").read_text())
{k: manifest[k] for k in ("run_id", "platform", "model", "emulated", "sglang_version",
                          "max_total_num_tokens", "project_commit", "hardware")}
""",
    ),
]


INVOKE = [
    (
        "md",
        """
# Invoke: does every Kimi feature work through the OpenAI client?

A server that answers `/health` is not yet a deployment that works. A missing `--reasoning-parser`
leaks the model's thinking into `content`; a tool-call parser mismatch returns tool calls as plain
text; images fail only when someone sends one. This stage sends the same requests a user's client
code sends (the `openai` package, as in the cookbook) and says, feature by feature, what works and
what does not.

It talks to the server of a run folder (the deploy stage's `handle.json`) or to any running server
given by `base_url`. Results go to `invoke.json` in the run folder; secrets never do.
""",
    ),
    ("parameters", invoke_parameters()),
    (
        "code",
        """
from kimi_runbooks import invoke
from kimi_runbooks.rundir import RunFolder

options = invoke.InvokeOptions(**{name: globals()[name] for name in invoke.InvokeOptions.model_fields})
# the one conversion of run_dir: every call below takes this RunFolder (a new one when only base_url is given)
folder = RunFolder.of(run_dir, create=True, label="invoke", secret_envs=[api_key_env])
print(f"run folder: {folder.path}")
""",
    ),
    (
        "md",
        """
## The checks

In order: `models` (the served model is listed), `chat` (a plain answer that ends with `stop`),
`thinking` and `thinking_stream` (`reasoning_content` separate from `content`, no `<think>` tags,
reasoning streamed first), `instant` (`chat_template_kwargs.thinking=false` gives no reasoning),
`tool_call` and `tool_call_stream` (a `get_weather` call whose arguments validate against the
tool's JSON schema; streamed deltas are accumulated by index), `tool_result` (the tool's answer is
sent back and the model uses it), `image` and `image_content` (a receipt drawn by the project,
sent as a base64 PNG; the answer must name the item on it), `image_url`, `image_tools` (an image
plus a `search_product` tool), and `concurrency` (parallel requests all succeed).

Each check is isolated: a timeout or HTTP error fails that check with the reason, and the next one
still runs. On the emulator, whether the model *read* the image cannot be judged, so
`image_content` is reported as `SKIP` with the reason instead of a pass.

Then the **agentic suite**, multi-turn tool calling the way agents drive Kimi, streamed and not:
`multi_turn` (call -> result -> call over three tools, ids `functions.<name>:<calls so far>` unique
across the conversation), `parallel_calls` (two tools in one turn, both results answered together),
`long_arguments` (~4 KB of nested unicode JSON, reassembled exactly from the stream), `tool_names`
(a hyphenated name), `no_parameters`, `tool_choice_auto` / `required` / `none` / `named`,
`thinking_then_call` and `instant_then_call`, `follow_up` (the answer after the tool result must not
be empty), `leaks` (no tool-call markers or `<think>` tags in `content` or `reasoning_content`) and
`truncated_call` (`max_tokens` inside a call: finish_reason `length`, no broken call). Each case
records what was expected, what each turn showed, the verdict and the reason.
""",
    ),
    (
        "code",
        """
# the folder's server (or base_url), the checks its model declares, each line relayed; invoke.json saved
results = invoke.run(folder, options)
""",
    ),
    (
        "md",
        """
## Summary

`status` is PASS, FAIL or SKIP, with the reason. Timings are `EMULATED` when the server is the
project's emulator (they then only show the emulator's latency model), `measured` otherwise.
""",
    ),
    (
        "code",
        """
counts = invoke.counts(results)
print(f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
invoke.summary_table(results)
""",
    ),
    (
        "md",
        """
## Agentic tool calling

One row per case: what SGLang with the `kimi_k2` parsers returns (`expected`), the verdict and why.
""",
    ),
    (
        "code",
        """
import pandas as pd
from IPython.display import display

card = invoke.agentic_card(results)
if card is None:
    print("the agentic suite did not run (checks names no agentic case)")
else:
    print(f"agentic: {card['passed']} of {card['cases']} cases passed ({card['source']})")
    display(pd.DataFrame(card["rows"]).set_index("case"))
""",
    ),
    (
        "md",
        """
## Saved

`invoke.json` (written by `invoke.run`) holds every check with its request/response transcript
(images elided, secrets redacted) and an `emulated` flag, for the report stage.
""",
    ),
    (
        "code",
        """
print(f"wrote {folder.invoke}")
""",
    ),
    (
        "md",
        """
## What failed, in detail

For each failed check: the reason and the last exchange with the server, to show what came back.
""",
    ),
    (
        "code",
        """
for r in results:
    if r.status == "fail":
        print(f"--- {r.name}: {r.reason}")
        print(invoke.last_exchange(r))
""",
    ),
    (
        "md",
        """
## Verdict

With `fail_on_error=True` (CI, or a runbook that must stop on a broken feature) the notebook fails
here, naming each failed check.
""",
    ),
    (
        "code",
        """
if fail_on_error:
    invoke.raise_if_failed(results)
""",
    ),
]


SPEED_BENCH = [
    (
        "md",
        """
# Speed benchmark: the published scenarios through SGLang's `bench_serving`

Runs a scenario set (params/scenarios) against the server of this run folder (or an external
`base_url`) with SGLang's own benchmark client, appends one line per scenario to
`run_dir/bench.jsonl` as it finishes, and compares the results with the platform's published
references. A rerun resumes: scenarios already `ok` or `over-capacity` are skipped.

Every number below is labelled **measured** (a real server), **emulated** (the CPU emulator:
not a hardware measurement) or **reference** (published, with its source).
""",
    ),
    ("parameters", speed_parameters()),
    (
        "code",
        """
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.speed import SpeedStageOptions, shared_worker

options = SpeedStageOptions(**{name: globals()[name] for name in SpeedStageOptions.model_fields})
# the one conversion of run_dir: every call below takes this RunFolder
folder = RunFolder.of(run_dir, create=True, secret_envs=[api_key_env])
# first: the bench worker's ~7 s of sglang imports then overlap every cell until the token check
print(shared_worker.prestart(folder, offline=offline, command_prefix=command_prefix, bench_python=bench_python))
""",
    ),
    (
        "code",
        """
from IPython.display import display

from kimi_runbooks import speed
""",
    ),
    (
        "md",
        """
## The server, the scenarios and the capacity they are checked against; the run

A progress bar per scenario; each result is appended to `bench.jsonl` as it finishes.
""",
    ),
    (
        "code",
        """
stage = speed.stage.run(folder, options)
target, platform, chosen, devices, results = stage.target, stage.platform, stage.scenarios, stage.devices, stage.results
cols = ["scenario", "status", "label", "max_concurrency", "completed", "total_input_tokens", "total_output_tokens", "output_throughput",
        "total_throughput", "output_tok_s_per_gpu", "tok_s_per_user", "median_ttft_ms", "median_tpot_ms", "error"]
results[[c for c in cols if c in results.columns]]
""",
    ),
    (
        "md",
        """
Latencies, median and p99 side by side (InferenceX style):
""",
    ),
    (
        "code",
        """
speed.latency_table(results[results["status"] == "ok"])
""",
    ),
    (
        "md",
        """
## Repeats: each run, and the mean with its 95% interval

A scenario run N > 1 times (`repeats`) keeps one row per run; above it is their mean. Here: the mean
of each main metric with a 95% interval for it (Student t, N-1 degrees of freedom). One run gives no
interval, and its row says so rather than showing a zero-width one.
""",
    ),
    (
        "code",
        """
speed.repeat_summary(speed.load_results(folder.bench, devices=devices, per_repeat=True), [s.id for s in chosen])
""",
    ),
    (
        "md",
        """
## Measured beside predicted

Each ok scenario beside what `kimi_runbooks.perfmodel` predicts for this run's plan at the
scenario's measured lengths and concurrency (calibration params/perfmodel/calibration.yaml), with
the band published results fell in around the model's estimate. `outside_band` names each metric
measured outside it: a misconfigured server, or a model that needs recalibrating. Predictions are
model estimates, never measurements. For an EMULATED run the emulator's latencies come from this
same model, so agreement is by construction (a pipeline check, not a validation). A run without a
plan of ours (an external server) says `no prediction: <reason>`.
""",
    ),
    (
        "code",
        """
predicted = speed.predicted_vs_measured(results, folder, target)
print(f"{int(predicted['outside_band'].astype(bool).sum()) if len(predicted) else 0} of {len(predicted)} scenario(s) outside the prediction band")
predicted
""",
    ),
    (
        "md",
        """
## Inside the server

While each scenario ran, the server's `/metrics` (running and queued requests, KV pool usage) and,
where the server's devices are on this host, their telemetry (board power) were sampled. A
concurrency reads `64 (41 effective)` when the server ran fewer requests at a time than asked;
goodput counts only the requests that met the scenario's SLO; J/token comes from measured board
power; $/M tokens from a device-hour price whose source is shown.
""",
    ),
    (
        "code",
        """
display(speed.inside_table(results))
speed.sweep_goodput(results)  # per sweep with an SLO: the highest concurrency that still meets it
""",
    ),
    (
        "code",
        """
import plotly.io as pio

pio.renderers.default = "notebook"  # plotly.js inlined (figures survive an offline HTML export); ~1.5 s, so not at start-up
figure = speed.server_timeseries(folder.path, results)
figure.show() if figure is not None else print("no /metrics or telemetry samples in this run")
for note in speed.inside_notes(folder.path, results):  # what the figure leaves out: 0 throughout, too few samples
    print(note)
""",
    ),
    (
        "md",
        """
## Against the published references

`ratio` = this run / reference. A regression is a throughput below the reference, or a latency
above it, by more than `tolerance`. Against the emulator these ratios test the pipeline, not the hardware.
Only `ok` scenarios are compared: a `not comparable` one (the server counted the scenario's tokens
differently from the benchmark's tokenizer) keeps its numbers above but is never set beside a reference.
""",
    ),
    (
        "code",
        """
references = speed.reference_frame(platform) if platform else speed.reference_frame([])
comparison = speed.compare(results, references, tolerance=options.tolerance)
print(f"{len(comparison)} comparisons, {int(comparison['regression'].sum()) if len(comparison) else 0} regressions "
      f"(tolerance {options.tolerance:.0%}); references: {sorted(set(references.get('source', [])))}")
speed.compare_wide(comparison)
""",
    ),
    (
        "code",
        """
comparison[comparison["regression"]] if len(comparison) else comparison
""",
    ),
    (
        "md",
        """
## Figures
""",
    ),
    (
        "code",
        """
speed.throughput_vs_concurrency(results, references).show()
speed.latency_vs_concurrency(results, references).show()
""",
    ),
    (
        "md",
        """
Throughput per GPU against tok/s per user: every platform's references plus this run.
""",
    ),
    (
        "code",
        """
speed.pareto(results, speed.reference_frame()).show()
""",
    ),
    (
        "md",
        """
Context x concurrency: the RTX PRO 6000 matrix reference, and this run's matrix cells if any (grey = over KV capacity, not run).
""",
    ),
    (
        "code",
        """
all_refs = speed.reference_frame()
speed.heatmap(all_refs[all_refs["reference_kind"] == "matrix"]).show()
matrix_run = results[results["scenario"].str.startswith("matrix-")]
if len(matrix_run):
    speed.heatmap(matrix_run).show()
""",
    ),
    (
        "md",
        """
## Verdict

A failed scenario fails this stage (with each scenario's error line), so a runbook never reports
the speed stage `ok` when its scenarios did not run.
""",
    ),
    (
        "code",
        """
for _, row in results.iterrows():
    print(f"{row['scenario']}: {row['status']}" + (f" - {row['error']}" if isinstance(row.get("error"), str) else ""))
if options.fail_on_error:
    speed.raise_if_failed(results)
""",
    ),
]


ACCURACY = [
    (
        "md",
        """
# Accuracy: the published evaluations, run and compared

Quantization (INT4, NVFP4, W4A8), FP8 KV caches and parser flags can cost accuracy without any error.
This notebook runs the same tools the SGLang cookbook used, with the same settings, against the server
of this run, and sets the results next to the published ones (`params/references/accuracy-*.yaml`).

Each tool runs as a subprocess in its own environment (`bash scripts/setup_tool_env.sh sgl-eval`,
`... inspect`); the verifier repos are git checkouts you stage (`k2vv_path`, `kvv_path`).
Results are appended to `run_dir/accuracy.jsonl` as each suite finishes; a rerun skips finished suites.
A suite that cannot run (missing checkout, dataset or env) becomes a *skipped* row that says how to stage it;
the other suites still run.
""",
    ),
    ("parameters", accuracy_parameters()),
    (
        "code",
        """
from kimi_runbooks import accuracy
from kimi_runbooks.rundir import RunFolder

options = accuracy.AccuracyOptions(**{name: globals()[name] for name in accuracy.AccuracyOptions.model_fields})
# the one conversion of run_dir: the stage below takes this RunFolder
folder = RunFolder.of(run_dir, create=True, secret_envs=[api_key_env])
for name, (tool, ref, note) in accuracy.SUITES.items():
    print(f"{'*' if name in options.suites else ' '} {name:18s} {tool:40s} vs {ref:14s} {note}")
""",
    ),
    (
        "md",
        """
## Run the suites

Progress bars show each suite while it runs. Against the emulator, math answers are deterministic filler,
so AIME accuracy is ~0: that is expected, and every such row is labelled *emulated*.
""",
    ),
    (
        "code",
        """
rows = accuracy.run(folder, options)
accuracy.rows_frame(rows)
""",
    ),
    (
        "md",
        """
## Compared with the published results

`rate` is the run's value as a fraction (counts divided by their `n`); `ci_low`/`ci_high` are Wilson 95%
intervals; `k_differs` marks a smoke run joined to a published metric of another sample count
(e.g. pass@1 over 1 repeat vs over 32). `source` says EMULATED or measured; reference values carry their source
in `params/references`.
""",
    ),
    (
        "code",
        """
table = accuracy.compare(rows)
cols = ["suite", "metric", "rate", "n", "ci_low", "ci_high", "ref_metric", "ref_rate", "ref_n", "delta", "k_differs", "source"]
table[cols] if len(table) else table
""",
    ),
    (
        "code",
        """
fig = accuracy.chart(table)
fig
""",
    ),
    (
        "code",
        """
skipped = [r for r in rows if r.status != "ok"]
print(f"{len(rows)} rows appended to {folder.accuracy}; {len(skipped)} suite(s) not run:")
for r in skipped:
    print(f"- {r.suite} ({r.status}): {r.detail}")
""",
    ),
]

COMMAND_GENERATOR = [
    (
        "md",
        """
# Kimi-K2 / Kimi-K2.6 launch command generator

Pick a platform and the knobs; the plan below is rebuilt on every change by the same
`plan.plan` the runbooks and `kimi-runbooks plan` use. It shows the `sglang serve` command,
the `docker run` form, per-node commands for multi-node platforms, the memory / KV-cache
estimate, every validation rule that fails (with its fix and source), and the predicted speed
for the `predict` scenarios (`kimi-runbooks plan --predict`: a model estimate, not a measurement).
Executed headlessly (papermill, CI), the notebook prints the default plan as text.
""",
    ),
    ("parameters", generator_parameters()),
    (
        "code",
        """
from kimi_runbooks.generator import DEFAULT_PREDICT, NOTEBOOK_KNOBS, command_generator, predicted_text
from kimi_runbooks.plan import plan_text

config = {name: globals()[name] for name in NOTEBOOK_KNOBS}
""",
    ),
    ("md", "## The plan for the parameters above (text)"),
    ("check", "print(plan_text(config))"),
    (
        "md",
        """
## Predicted speed (a model estimate from kimi_runbooks.perfmodel, never a measurement)

TTFT, TPOT and throughput the calibrated performance model predicts for this plan, with the band
published results fell in around its estimates (params/perfmodel/calibration.yaml).
""",
    ),
    (
        "code",
        "spec = DEFAULT_PREDICT if predict is None else predict\n"
        "print(predicted_text(config, spec) if spec else 'no scenarios to predict (predict=\"\")')",
    ),
    ("md", "## Interactive form (needs a live Jupyter kernel)"),
    ("code", "command_generator()"),
]

REPORT_CELLS = [
    (
        "parameters",
        "from typing import Optional\n\nrun_dir: Optional[str] = None  # the run folder to report on (outputs/<run id>)",
    ),
    (
        "code",
        "from kimi_runbooks import report\nfrom kimi_runbooks.rundir import RunFolder\n\nreport.setup_notebook()\n"
        "data = report.collect(RunFolder.of(run_dir))  # the one conversion of run_dir\nreport.show_top(data)",
    ),
    (
        "md",
        """
## Details

Every number says where it came from: measured (with the run id), emulated (the project's
emulator), real SGLang with a tiny model (a CPU rehearsal), or a published reference (named under
each figure). Tables list values with their units; settings and
transcripts open on click.

### Feature checks (invoke)
""",
    ),
    ("code", "report.show_invoke(data)"),
    ("md", "### Speed against published references"),
    ("code", "report.show_speed(data)"),
    ("md", "### Accuracy against published references"),
    ("code", "report.show_accuracy(data)"),
    ("md", "### Plan and launch command"),
    ("code", "report.show_plan(data)"),
    ("md", "### What ran where (manifest)"),
    ("code", "report.show_manifest(data)"),
    ("md", "### Stages"),
    ("code", "report.show_stages(data)"),
    ("md", "### Verdict as text"),
    ("check", "report.show_verdict(data)"),
]

CELLS_BY_STAGE = {
    "deploy": DEPLOY,
    "invoke": INVOKE,
    "speed": SPEED_BENCH,
    "accuracy": ACCURACY,
    "report": REPORT_CELLS,
}
"""Each stage's cells under its name in kimi_runbooks.stages.STAGES (which names the notebook file)."""
OTHER_NOTEBOOKS = {"command_generator.ipynb": COMMAND_GENERATOR}
"""Notebooks that are not a stage of the runbook."""
