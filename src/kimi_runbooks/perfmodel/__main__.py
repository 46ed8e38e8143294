"""`python -m kimi_runbooks.perfmodel calibrate [--write] [--params-dir DIR]` and `... references`.

calibrate fits the efficiency factors on params/references, validates them (leave one document
out, leave one run out), prints both tables and, with --write, saves
params/perfmodel/calibration.yaml (factors and uncertainty bands). Takes a few minutes on 2 cores.
references prints each published figure that is compared, never fitted (`compare_only`), beside
the prediction for its plan: the only check of a model no fitted result covers (Kimi-K3).
"""

from __future__ import annotations

import argparse
import sys

from ._deps import load_catalog
from .beside_measured import format_reference_checks, predicted_beside_references
from .calibration import Evaluator
from .observations import observations
from .store import save_calibration
from .validation import calibrate, format_checks, summary


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
    calibration, doc_out, run_out = calibrate(ev)
    print(format_checks(doc_out, "== leave one document out (a platform family never calibrated)"))
    print()
    print(format_checks(run_out, "== leave one run out (a calibrated family, an unseen scenario)"))
    print()
    for fam, f in sorted(calibration.families.items()):
        print(f"factors {fam}: {f.as_dict()}")
    print(f"factors global: {calibration.global_factors.as_dict()}")
    if args.write:
        extra = {"validation": {"document_out": summary(doc_out), "run_out": summary(run_out)}}
        path = save_calibration(calibration, catalog.root, extra)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
