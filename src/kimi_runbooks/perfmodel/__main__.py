"""`python -m kimi_runbooks.perfmodel calibrate [--write] [--params-dir DIR]` and `... references`.

calibrate fits the bounded hardware efficiencies and software-stack terms on params/references,
prints the degrees of freedom per family, validates (leave whole pages out, time split, leave one run
out, held-out references), prints the tables and coverage and, with --write, saves
params/perfmodel/calibration.yaml (parameters, bands, validation). Exits 1 if a fitted value left its
documented range. Takes a few minutes on 2 cores.
references prints each published figure that is compared, never fitted (`compare_only`), beside
the prediction for its plan: the only check of a model no fitted result covers (Kimi-K3).
"""

from __future__ import annotations

import argparse
import sys

from ._deps import load_catalog
from .beside_measured import format_reference_checks, predicted_beside_references
from .calibration import Evaluator, dof_table, free_parameters
from .factors import out_of_range
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
    args = parser.parse_args(argv)
    catalog = load_catalog(args.params_dir)
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


if __name__ == "__main__":
    sys.exit(main())
