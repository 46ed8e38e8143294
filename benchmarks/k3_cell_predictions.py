"""Every current Kimi-K3 cookbook cell predicted: TPOT, output tok/s and TTFT with the band each
prediction carries and its basis, as `kimi-runbooks plan --model kimi-k3 --platform P --strategy S
[--no-speculative] [--pd-role R] --predict ...` prints them, one line per cell and load. The default
loads are c=1 and c=64: a cell's strategy changes its state-pool ratio, which bounds admission only
once many requests run.

    .venv/bin/python benchmarks/k3_cell_predictions.py                 # in=1000 out=1000 c=1,64
    .venv/bin/python benchmarks/k3_cell_predictions.py --predict "in=8000,out=1000,c=64"
"""

from __future__ import annotations

import argparse

from kimi_runbooks.perfmodel import parse_predict_spec
from kimi_runbooks.perfmodel.caveats import ASSUMED_ACCEPT, ROLE_ALONE
from kimi_runbooks.perfmodel.cookbook_cells import format_cells_table, predict_cells


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="kimi-k3")
    ap.add_argument("--predict", default="in=1000,out=1000,c=1,64", help="scenarios, as plan --predict")
    args = ap.parse_args()
    rows = predict_cells(args.model, parse_predict_spec(args.predict))
    print(f"## {args.model}: {len(rows)} current cookbook cells, {args.predict} (PREDICTED, not measured)")
    print(format_cells_table(rows))
    print(f"# accept 2.5 assumed: {ASSUMED_ACCEPT}")
    print(f"# role alone: {ROLE_ALONE['decode']} (prefill: only TTFT speaks for the role)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
