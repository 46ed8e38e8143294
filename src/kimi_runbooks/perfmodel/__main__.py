"""`python -m kimi_runbooks.perfmodel calibrate [--write] [--params-dir DIR]`, `... references` and
`... reference-from-run RUN_DIR --id ID --source TEXT`.

calibrate fits the bounded hardware efficiencies and software-stack terms on params/references,
prints the degrees of freedom per family, validates (leave whole pages out, time split, leave one run
out, held-out references), prints the tables and coverage and, with --write, saves
params/perfmodel/calibration.yaml (parameters, bands, validation). Exits 1 if a fitted value left its
documented range. Takes a few minutes on 2 cores.
references prints each published figure that is compared, never fitted (`compare_only`), beside
the prediction for its plan: the only check of a model no fitted result covers (Kimi-K3).
reference-from-run writes a measured run folder (the speed stage on real hardware) as
params/references/speed-<ID>.yaml, which the next calibrate fits and validates like a public page;
emulated runs and CPU rehearsals are refused.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..rundir import RunFolder, RunFolderError
from ._deps import load_catalog
from .beside_measured import format_reference_checks, predicted_beside_references
from .calibration import Evaluator, dof_table, free_parameters
from .factors import out_of_range
from .from_run import ReferenceFromRunError, reference_from_run, write_reference
from .observations import observations
from .store import save_calibration
from .validation import budget_report, calibrate, format_checks, format_coverage


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kimi_runbooks.perfmodel",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    cal = sub.add_parser("calibrate", help="fit, validate, print; --write saves the calibration")
    cal.add_argument("--write", action="store_true")
    cal.add_argument("--params-dir")
    refs = sub.add_parser("references", help="compare-only published figures beside their predictions")
    refs.add_argument("--model")
    refs.add_argument("--params-dir")
    run = sub.add_parser("reference-from-run", help="a measured run folder as a reference to fit and validate on")
    run.add_argument("run_dir")
    run.add_argument("--id", required=True, help="the reference id (a slug): the file is speed-<id>.yaml")
    run.add_argument("--source", required=True, help="where the figures can be checked (URL, or who/where/when)")
    run.add_argument("--hardware", default="", help="e.g. '8x AMD Instinct MI355X (ROCm 7.2)'")
    run.add_argument("--params-dir")
    run.add_argument("--force", action="store_true", help="replace an existing reference of that id")
    args = parser.parse_args(argv)
    catalog = load_catalog(args.params_dir)
    if args.command == "reference-from-run":
        return _reference_from_run(args, catalog.root)
    if args.command == "references":
        print(format_reference_checks(predicted_beside_references(catalog, args.model)))
        return 0
    ev = Evaluator(catalog, observations(catalog))
    print(dof_table(free_parameters(ev, ev.obs)))
    calibration, v = calibrate(ev)
    print(format_checks(v.page_out, "== leave one page out (every reference of one source page)"))
    print()
    print(format_checks(v.run_out, "== leave one run out (a calibrated family, an unseen scenario)"))
    print()
    print(format_coverage(v.report()["page_out"]["coverage"], "page out"))
    for name, value in calibration.values.items():
        print(f"parameter {name} = {value:.4g}")
    bad = out_of_range(calibration.values)
    if bad:
        print("OUT OF RANGE: " + "; ".join(bad), file=sys.stderr)
        return 1
    if args.write:
        extra = {"degrees_of_freedom": budget_report(ev), "validation": v.report()}
        path = save_calibration(calibration, catalog.root, extra)
        print(f"wrote {path}")
    return 0


def _reference_from_run(args: argparse.Namespace, params_dir: Path) -> int:
    try:
        ref = reference_from_run(RunFolder(args.run_dir), args.id, args.source, args.hardware)
        path = write_reference(ref, params_dir, force=args.force)
    except (ReferenceFromRunError, RunFolderError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path}: {len(ref.data['rows'])} scenarios")
    for why in ref.left_out:
        print(f"left out: {why}")
    print("next: python -m kimi_runbooks.perfmodel calibrate --write (it fits and validates the new page)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
