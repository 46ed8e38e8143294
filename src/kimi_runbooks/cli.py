"""`kimi-runbooks` console script: plan launches, run the emulator, check params."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pydantic import ValidationError

from .plan import DEFAULT_SGLANG_VERSION, ParamsError, PlanConfig, format_plan, load_catalog, plan
from .plan.view import format_rules

EXIT_INVALID = 2


def _add_plan_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--platform", required=True, help="platform id (params/platforms)")
    p.add_argument("--model", help="model id (params/models); default: the platform recipe's")
    p.add_argument("--deployment", help="published multi-role deployment id (params/deployments)")
    p.add_argument("--tp", type=int)
    p.add_argument("--dp", type=int)
    p.add_argument("--ep", type=int)
    p.add_argument("--pp", type=int)
    p.add_argument("--enable-dp-attention", action="store_true", default=None)
    p.add_argument("--quantization")
    p.add_argument("--kv-cache-dtype")
    p.add_argument("--mem-fraction-static", type=float)
    p.add_argument("--context-length", type=int)
    p.add_argument("--no-reasoning-parser", action="store_true")
    p.add_argument("--no-tool-call-parser", action="store_true")
    p.add_argument("--speculative", action="store_true", help="EAGLE3 speculative decoding")
    p.add_argument(
        "--strategy",
        choices=["low-latency", "balanced", "high-throughput"],
        help="the cookbook cell's operating point, for models whose cookbook publishes cells (kimi-k3); "
        "default: the cookbook's default (balanced)",
    )
    p.add_argument(
        "--enable-metrics", action="store_true", help="add SGLang's --enable-metrics (the speed stage reads /metrics)"
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000)
    p.add_argument("--api-key-env", help="NAME of the env var holding the API key")
    p.add_argument("--model-path", help="local weights directory instead of the hub id")
    p.add_argument("--nnodes", "--nodes", type=int, dest="nnodes", help="nodes the server spans")
    p.add_argument(
        "--devices",
        type=int,
        help="accelerators per node you have (default: the platform's, as the machine ships: 8 for AMD Instinct "
        "and NVIDIA HGX, 4 per GB200/GB300 tray, 16 dies per Ascend A3 node)",
    )
    p.add_argument(
        "--device-ids",
        help="comma-separated accelerator indices this server uses, e.g. 4,5,6,7 (pinned with "
        "CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES / ASCEND_RT_VISIBLE_DEVICES)",
    )
    p.add_argument("--node-ip", action="append", default=[], dest="node_ips")
    p.add_argument("--sglang-version", default=DEFAULT_SGLANG_VERSION)
    p.add_argument("--docker-image", help="image of the docker form (default: the platform's)")
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="one more environment variable for the server (repeatable); the value is passed literally",
    )
    p.add_argument(
        "--allow", action="append", default=[], metavar="RULE_ID", help="turn this rule's error into a recorded warning"
    )
    p.add_argument(
        "--extra-arg",
        action="append",
        default=[],
        dest="extra_args",
        help="pass one more raw argument to the server (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print the plan as one JSON object")
    p.add_argument(
        "--predict",
        metavar="SPEC",
        help='predicted speed for scenarios, e.g. "in=1000,out=1000,c=1,16,64" '
        "(keys: in, out, c or rate, prefix, accept, fixed=1 for equal lengths; lists multiply)",
    )


class CliInputError(ValueError):
    """A command-line value that cannot become a PlanConfig field; the message says the fix."""


def _env_pairs(items: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq:
            raise CliInputError(f"--env {item!r} has no '='. Fix: pass --env NAME=VALUE, e.g. --env SGLANG_USE_AITER=1")
        env[name] = value
    return env


def _device_ids(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise CliInputError(
            f"--device-ids {text!r} is not a list of indices. "
            "Fix: pass comma-separated numbers, e.g. --device-ids 4,5,6,7"
        ) from None


def config_from_args(args: argparse.Namespace) -> PlanConfig:
    fields: dict[str, Any] = {
        name: getattr(args, name)
        for name in (
            "platform",
            "model",
            "deployment",
            "tp",
            "dp",
            "ep",
            "pp",
            "enable_dp_attention",
            "quantization",
            "kv_cache_dtype",
            "mem_fraction_static",
            "context_length",
            "speculative",
            "strategy",
            "enable_metrics",
            "host",
            "port",
            "api_key_env",
            "model_path",
            "nnodes",
            "devices",
            "node_ips",
            "sglang_version",
            "docker_image",
            "allow",
            "extra_args",
        )
    }
    if args.no_reasoning_parser:
        fields["reasoning_parser"] = None
    if args.no_tool_call_parser:
        fields["tool_call_parser"] = None
    if args.env:
        fields["env"] = _env_pairs(args.env)
    if args.device_ids:
        fields["device_ids"] = _device_ids(args.device_ids)
    return PlanConfig(**{k: v for k, v in fields.items() if v is not None})


def cmd_plan(args: argparse.Namespace) -> int:
    try:
        launch = plan(config_from_args(args))
    except ValidationError as exc:
        for detail in exc.errors():
            field = ".".join(map(str, detail["loc"]))
            print(f"error: {field}: {detail['msg'].removeprefix('Value error, ')}", file=sys.stderr)
        return EXIT_INVALID
    except (ParamsError, CliInputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    predictions = None
    if args.predict:
        from .perfmodel import PredictSpecError, format_predictions, parse_predict_spec, predict

        try:
            scenarios = parse_predict_spec(args.predict)
        except PredictSpecError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_INVALID
        from .perfmodel.geometry import NoPerformanceModelError

        try:
            predictions = predict(launch, scenarios) if launch.ok else []
        except NoPerformanceModelError as exc:
            print(f"error: --predict: {exc}", file=sys.stderr)
            return EXIT_INVALID
    if args.json:
        body = launch.as_dict()
        if predictions is not None:
            body["prediction"] = [p.as_dict() for p in predictions]
        print(json.dumps(body, indent=2))
    else:
        print(format_plan(launch))
        if predictions:
            print("\n" + format_predictions(predictions))
        elif predictions is not None:
            print("\n## predicted speed: not predicted, the plan is invalid")
    for err in launch.errors:
        print(f"error: {err}", file=sys.stderr)
    return 0 if launch.ok else EXIT_INVALID


def cmd_validate_params(args: argparse.Namespace) -> int:
    try:
        catalog = load_catalog(args.params_dir)
    except ParamsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    print(
        f"params OK: {len(catalog.platforms)} platforms, {len(catalog.models)} models, "
        f"{len(catalog.rules)} rules (every expression parsed, every fact name known), "
        f"{len(catalog.deployments)} deployments, "
        f"{len(catalog.scenarios)} scenarios, {len(catalog.references)} references"
    )
    return 0


def cmd_rules(args: argparse.Namespace) -> int:
    try:
        catalog = load_catalog()
        if args.sglang_version:
            PlanConfig(platform="-", sglang_version=args.sglang_version)  # the version check and its fix
    except ParamsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except ValidationError as exc:
        print(f"error: {exc.errors()[0]['msg'].removeprefix('Value error, ')}", file=sys.stderr)
        return EXIT_INVALID
    if args.json:
        print(json.dumps([r.model_dump() for r in catalog.rules], indent=2))
    else:
        print(format_rules(catalog, args.sglang_version))
    return 0


def cmd_teardown(args: argparse.Namespace) -> int:
    """Stop what runs left running: the named run folders', or every orphan the registry knows."""
    from .deploy import registry
    from .deploy.teardown import orphan_report, stop_orphans, teardown_run
    from .rundir import RunFolder, RunFolderError

    if args.run_dirs:
        code = 0
        for run_dir in args.run_dirs:
            try:
                done = teardown_run(RunFolder(run_dir))
            except RunFolderError as exc:
                print(f"error: {exc}", file=sys.stderr)
                code = EXIT_INVALID
                continue
            print(f"{run_dir}: " + ("; ".join(done) if done else "nothing left running"))
        return code
    if args.all:
        stopped = stop_orphans(include_detached=True)
        print(orphan_report(stopped) if stopped else "no orphaned or detached servers to stop")
    live = registry.entries()
    if live:
        print(f"{len(live)} server(s) still registered (their runs are still going, or pass the run folder):")
        for entry in live:
            print(f"  - {entry.describe()}")
    elif not args.all:
        print("no servers registered. Usage: kimi-runbooks teardown RUN_DIR [...] | --all")
    return 0


def cmd_emulator(argv: list[str]) -> int:
    from .emulator.cli import main as emulator_main

    return emulator_main(argv) or 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kimi-runbooks", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_plan = sub.add_parser("plan", help="validate a configuration and print its launch plan")
    _add_plan_args(p_plan)
    p_plan.set_defaults(func=cmd_plan)
    p_rules = sub.add_parser("rules", help="list every launch rule with its SGLang version range and source")
    p_rules.add_argument("--sglang-version", help="also say whether each versioned rule applies at this version")
    p_rules.add_argument("--json", action="store_true")
    p_rules.set_defaults(func=cmd_rules)
    p_val = sub.add_parser("validate-params", help="load and validate every file under params/")
    p_val.add_argument("--params-dir")
    p_val.set_defaults(func=cmd_validate_params)
    p_down = sub.add_parser(
        "teardown",
        help="stop what a run left running (RUN_DIR), or every orphaned server the registry knows (--all)",
    )
    p_down.add_argument("run_dirs", nargs="*", metavar="RUN_DIR", help="run folder(s) whose server to stop")
    p_down.add_argument(
        "--all", action="store_true", help="stop every registered server whose run has ended (orphans, detached)"
    )
    p_down.set_defaults(func=cmd_teardown)
    sub.add_parser("emulator", help="run the SGLang emulator (see `kimi-runbooks emulator --help`)", add_help=False)
    sub.add_parser(
        "report",
        help="render RUN_DIR/report.html, or one comparison page for several "
        "run folders (see `kimi-runbooks report --help`)",
        add_help=False,
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "emulator":
        return cmd_emulator(argv[1:])
    if argv and argv[0] == "report":
        from .report.cli import main as report_main

        return report_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
