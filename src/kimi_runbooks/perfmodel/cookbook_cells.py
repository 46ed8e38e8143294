"""Every current cookbook cell of a model, planned and predicted: what `plan --model M --platform P
--strategy S [--no-speculative] [--pd-role R] --predict ...` prints for each, gathered so a test can
check them all and benchmarks/k3_cell_predictions.py can print them as one table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._deps import CookbookCell, load_catalog, plan
from .predict import Prediction, Scenario, predict
from .spec import _band
from .stack import plan_stack


@dataclass(frozen=True)
class CellPrediction:
    cell: CookbookCell
    predictions: list[Prediction]

    @property
    def label(self) -> str:
        """'b300 / decode / balanced / dspark': the plan options that pick the cell."""
        spec = self.cell.speculative or "none"
        return f"{self.cell.hardware} / {self.cell.role} / {self.cell.strategy} / {spec}"


def cell_fields(cell: CookbookCell, model: str) -> dict[str, Any]:
    """The PlanConfig fields that pick `cell` (as the CLI's --platform/--strategy/--pd-role/--no-speculative)."""
    fields: dict[str, Any] = {"platform": cell.hardware, "model": model, "strategy": cell.strategy}
    if cell.role != "unified":
        fields["pd_role"] = cell.role
    if cell.speculative:
        fields["speculative"] = cell.speculative != "none"
    return fields


def current_cells(model: str) -> list[CookbookCell]:
    """The model's cells of its newest kept cookbook revision, on the platforms params/ has."""
    book = load_catalog().models[model].cookbook
    return list(book.cells) if book is not None else []


def predict_cells(model: str, scenarios: list[Scenario]) -> list[CellPrediction]:
    """Each current cell planned and predicted for `scenarios` (a cell whose plan is invalid gets no
    predictions: `plan --predict` prints 'not predicted' for it)."""
    out = []
    for cell in current_cells(model):
        launch = plan(cell_fields(cell, model))
        preds = predict(launch, scenarios, stack=plan_stack(launch)) if launch.ok else []
        out.append(CellPrediction(cell, preds))
    return out


def format_cells_table(rows: list[CellPrediction]) -> str:
    """One line per cell and scenario: TPOT, output tok/s and TTFT with their bands, and the basis."""
    header = (
        f"{'cell (platform / role / strategy / spec)':<44} {'dev':>4} {'load':>6} {'TPOT ms [band]':>22} "
        f"{'out tok/s [band]':>24} {'TTFT ms [band]':>22}  basis"
    )
    lines = [header]
    for row in rows:
        if not row.predictions:
            lines.append(f"{row.label:<44} not predicted: the plan is invalid")
            continue
        for p in row.predictions:
            load = f"c={p.concurrency}" if p.concurrency is not None else f"{p.request_rate:g}/s"
            notes = [p.band_basis]
            if p.accept_length is not None:
                assumed = " assumed" if p.accept_basis.startswith("ASSUMED") else ""
                notes.append(f"accept {p.accept_length:g}{assumed}")
            if p.role_note:
                notes.append("role alone")
            lines.append(
                f"{row.label:<44} {p.devices:>4} {load:>6} {_band(p, 'median_tpot_ms', 1):>22} "
                f"{_band(p, 'output_throughput'):>24} {_band(p, 'median_ttft_ms'):>22}  {'; '.join(notes)}"
            )
    return "\n".join(lines) + "\n"
