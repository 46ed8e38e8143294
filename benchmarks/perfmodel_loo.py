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

Then, per family and per stack with each page weighted once, median |error| beside the COVERAGE of
the 10th-90th percentile band and its SHARPNESS (median high/low): the band `plan --predict` would
show, its support tier's (two or more pages of the family and stack / one page / first principles),
sized from the other pages' errors only (validation.honest_band); and the verdict against issue 43's
done-when: coverage 70-90% with a median high/low <= 2.5x for a family with two or more pages (one
page: "single source"). Exit status 0 always: it measures.

    .venv/bin/python benchmarks/perfmodel_loo.py            # ~3-5 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import sys

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.perfmodel.beside_measured import out_of_sample_summary, predicted_beside_references
from kimi_runbooks.perfmodel.calibration import Evaluator, dof_table, free_parameters
from kimi_runbooks.perfmodel.observations import observations
from kimi_runbooks.perfmodel.validation import HEADLINE, calibrate, format_checks, format_coverage

GOAL, FAMILY_LIMIT, COVERAGE, SHARPNESS = 0.20, 0.35, (0.70, 0.90), 2.5


def family_verdicts(name: str, report: dict) -> list[str]:
    """Issue 43's done-when, per family, each page weighted once: coverage 70-90% with a median
    high/low <= 2.5x where the family has two or more pages; a one-page family is "single source"."""
    lines = []
    for group, row in sorted(report["coverage"].items()):
        if not group.startswith("family "):
            continue
        if row["pages"] < 2:
            lines.append(f"{name}: {group}: single source (one page: no limit can judge it)")
            continue
        parts = []
        for m in HEADLINE:
            if m not in row:
                continue
            v = row[m]
            ok_cov = COVERAGE[0] <= v["coverage"] <= COVERAGE[1]
            ok_sharp = v["sharpness"] <= SHARPNESS
            parts.append(
                f"{m} |err| {v['median_abs_error']:.0%}, coverage {v['coverage']:.0%} "
                f"({'meets' if ok_cov else 'misses'} 70-90%), high/low x{v['sharpness']:.1f} "
                f"({'meets' if ok_sharp else 'misses'} <= {SHARPNESS:g}x)"
            )
        lines.append(f"{name}: {group} ({row['pages']} pages): " + "; ".join(parts))
    return lines


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
    for name in ("page_out", "time_split", "held_out"):
        print("\n".join(family_verdicts(name.replace("_", " "), report[name])))
    print()
    print(
        "== Kimi-K3 out of sample (compare_only references, never fitted; nothing is fitted to them, so this "
        "is the error before any fit)"
    )
    print(out_of_sample_summary(predicted_beside_references(catalog, "kimi-k3")))
    print(
        "note: each result's band is its support tier's (pages of its family and stack behind it: "
        "store.SUPPORT_TIERS), sized from the OTHER pages' page-out errors only (validation.honest_band); "
        "the committed bands use every page's"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
