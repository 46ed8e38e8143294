"""`kimi-runbooks` console script: plan launches, run the emulator, check params."""

from __future__ import annotations

import argparse
import json
import sys

from pydantic import ValidationError

from .catalog import ParamsError, default_params_dir, load_catalog
from .plan import PlanConfig, format_plan, plan
from .plan.cli_options import CliInputError, add_plan_options, config_from_args
from .plan.config import field_error
from .plan.view import format_rules

EXIT_INVALID = 2


def _add_plan_args(p: argparse.ArgumentParser) -> None:
    add_plan_options(p)  # one option per PlanConfig field (plan/cli_options.py)
    p.add_argument("--json", action="store_true", help="print the plan as one JSON object")
    p.add_argument(
        "--predict",
        metavar="SPEC",
        help='predicted speed for scenarios, e.g. "in=1000,out=1000,c=1,16,64" '
        "(keys: in, out, c or rate, prefix, accept, fixed=1 for equal lengths; lists multiply)",
    )
    p.add_argument(
        "--stack",
        metavar="KEY=VALUE,...",
        help="the software stack to predict for where the plan's flags and image do not show it, e.g. "
        '"moe_path=flydsl,precision=W4A8,torch_compile=true,accept_length=2.9" '
        "(keys: image, sglang_version, attention_backend, moe_path, precision, torch_compile, cuda_graphs, "
        "speculative, accept_length, pp, tuned)",
    )


def cmd_plan(args: argparse.Namespace) -> int:
    try:
        launch = plan(config_from_args(args))
    except ValidationError as exc:
        for detail in exc.errors():
            print(f"error: {field_error(detail)}", file=sys.stderr)
        return EXIT_INVALID
    except (ParamsError, CliInputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    predictions = None
    if args.predict:
        from .perfmodel import (
            PredictSpecError,
            format_predictions,
            parse_predict_spec,
            predict,
            published_for_plan_text,
        )
        from .perfmodel.stack import StackError, parse_stack_spec, plan_stack

        try:
            scenarios = parse_predict_spec(args.predict)
            base = plan_stack(launch)
            stack = parse_stack_spec(args.stack, base) if args.stack else base
        except (PredictSpecError, StackError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_INVALID
        from .perfmodel.geometry import NoPerformanceModelError

        try:
            predictions = predict(launch, scenarios, stack=stack) if launch.ok else []
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
            published = published_for_plan_text(launch)
            if published:
                print(published)
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


def cmd_cookbook_sync(args: argparse.Namespace) -> int:
    """Keep a newer revision of the cookbook pages, regenerate their recipes, print what changed."""
    from pathlib import Path

    from .cookbook.jsconfig import ConfigReadError
    from .cookbook.sync import SyncError, regenerate, sync

    params_dir = Path(args.params_dir) if args.params_dir else default_params_dir()
    try:
        if args.regenerate:
            for path in regenerate(params_dir):
                print(f"regenerated {path}")
            return 0
        if not args.sources:
            raise SyncError("nothing to read. Fix: pass --from <sglang checkout or config .jsx files>, or --regenerate")
        for line in sync(params_dir, [Path(p) for p in args.sources], args.commit):
            print(line)
    except (SyncError, ConfigReadError, ParamsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
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
    from .deploy.teardown import stop_orphans, teardown_run
    from .paths import REPO_ROOT
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
    print(f"this checkout: {REPO_ROOT} (its registry: {registry.registry_dir()})")
    if args.all:
        sweep = stop_orphans(include_detached=True)
        print(sweep.report() or "no orphaned or detached servers of this checkout to stop")
    found = registry.scan()
    if found.entries:
        print(f"{len(found.entries)} server(s) of this checkout registered (runs going on, or pass the run folder):")
        print("\n".join(f"  - {entry.describe()}" for entry in found.entries))
    elif not args.all:
        print("no servers of this checkout registered. Usage: kimi-runbooks teardown RUN_DIR [...] | --all")
    if found.unreadable and not args.all:  # --all reported them already
        print("\n".join(["unreadable registry entries (skipped):", *(f"  - {x}" for x in found.unreadable)]))
    others = registry.other_checkouts()
    if others:
        print(
            f"{len(others)} server(s) registered by other checkouts, not stopped from here "
            "(run `kimi-runbooks teardown --all` in that checkout, or pass the run folder):"
        )
        unknown = "unknown: registered before registries were per checkout"
        print("\n".join(f"  - {e.describe()} [checkout {e.checkout or unknown}]" for e in others))
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
    p_book = sub.add_parser("cookbook", help="the SGLang cookbook pages kept as data (params/cookbook)")
    book_sub = p_book.add_subparsers(dest="cookbook_command", required=True)
    p_sync = book_sub.add_parser(
        "sync",
        help="read a newer revision of the kept pages, regenerate the recipes and print what changed, cell by cell",
    )
    p_sync.add_argument(
        "--from",
        dest="sources",
        action="append",
        metavar="PATH",
        help="an sglang checkout, or a page's config .jsx (repeatable)",
    )
    p_sync.add_argument(
        "--commit", help="the sglang commit the inputs are at (default: the checkout's HEAD, or <page>@<sha>.jsx)"
    )
    p_sync.add_argument(
        "--regenerate", action="store_true", help="regenerate every kept revision's recipes from its kept file"
    )
    p_sync.add_argument("--params-dir", help="the params folder to update (default: the checkout's)")
    p_sync.set_defaults(func=cmd_cookbook_sync)
    p_down = sub.add_parser(
        "teardown",
        help="stop what a run left running (RUN_DIR), or every orphaned server the registry knows (--all)",
    )
    p_down.add_argument("run_dirs", nargs="*", metavar="RUN_DIR", help="run folder(s) whose server to stop")
    p_down.add_argument(
        "--all",
        action="store_true",
        help="stop every server this checkout registered whose run has ended (orphans, detached); "
        "other checkouts' servers are listed, not stopped",
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
