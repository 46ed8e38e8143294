"""How good are the performance model's predictions? Validation over every published result.

For every speed result in params/references (bench_serving blocks, result tables, the RTX PRO 6000
matrix; Ascend SLO targets listed, not counted) prints reference, run, metric, predicted, published,
error and the basis the prediction would carry, for:

* leave one PAGE out (the headline): every reference transcribed from one public page leaves
  together (the Kimi-K2.6 cookbook page carries the H200 and the MI350X results), and the fit
  without it re-decides its own degrees of freedom (calibration.free_parameters);
* the time split: each dated page (`published:`) predicted from the pages published before it;
* leave one run out (a calibrated family, an unseen scenario);
* held-out references (`held_out: true`): never fitted, predicted by the full calibration.

Then, per family and per stack, median |error| beside the COVERAGE of the 10th-90th percentile band
(the band `plan --predict` would show, sized from the other pages' errors only: validation.honest_band),
and the verdict against issue 26's done-when: median |error| <= 20% for TPOT and output throughput,
coverage between 70% and 90%, no family above 35%. Exit status 0 always: it measures.

    .venv/bin/python benchmarks/perfmodel_loo.py            # ~3-5 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import sys

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.perfmodel.calibration import Evaluator, dof_table, free_parameters
from kimi_runbooks.perfmodel.observations import observations
from kimi_runbooks.perfmodel.validation import HEADLINE, calibrate, format_checks, format_coverage

GOAL, FAMILY_LIMIT, COVERAGE = 0.20, 0.35, (0.70, 0.90)


def verdict(name: str, report: dict) -> str:
    mae = report["median_abs_error"]
    fams = report["median_abs_error_tpot_and_throughput_by_family"]
    cov = report["coverage"].get("all", {})
    if not cov:
        return f"{name}: no results"
    parts = []
    for m in HEADLINE:
        c = cov[m]["coverage"]
        parts.append(
            f"{m} |err| {mae[m]:.0%} ({'meets' if mae[m] <= GOAL else 'misses'} <= {GOAL:.0%}), "
            f"coverage {c:.0%} ({'meets' if COVERAGE[0] <= c <= COVERAGE[1] else 'misses'} 70-90%)"
        )
    worst = max(fams.values()) if fams else float("nan")
    return (
        f"{name}: " + "; ".join(parts) + f"; worst family {report['worst_family']} {worst:.0%} "
        f"({'within' if worst <= FAMILY_LIMIT else 'beyond'} the {FAMILY_LIMIT:.0%} limit)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--params-dir")
    args = parser.parse_args(argv)
    catalog = load_catalog(args.params_dir)
    ev = Evaluator(catalog, observations(catalog))
    print(dof_table(free_parameters(ev, ev.obs)))
    print()
    _, v = calibrate(ev)
    report = v.report()
    print(format_checks(v.page_out, "== leave one page out (the headline)"))
    print()
    print(format_checks(v.time_split, "== time split (fit on older pages, predict newer)"))
    print()
    print(format_checks(v.run_out, "== leave one run out (a calibrated family, an unseen scenario)"))
    print()
    print(format_checks(v.held_out, "== held out (held_out: true, never fitted)"))
    print()
    for name in ("page_out", "time_split", "held_out"):
        print(format_coverage(report[name]["coverage"], name.replace("_", " ")))
    print()
    print(verdict("page out", report["page_out"]))
    print(verdict("time split", report["time_split"]))
    print(verdict("held out", report["held_out"]))
    print(
        "note: coverage uses, for each result, the band sized from the other pages' validation errors only "
        "(validation.honest_band); the committed bands use all pages"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
