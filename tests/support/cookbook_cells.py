"""The newest cookbook cells' server commands, as the runbook hands them to a server: every Kimi-K3
cell of f795573d (unified and PD roles, DSPARK overlay and Non-Spec) and every Kimi-K2.6 cell of
1d8c2d38 on the platforms params/ has, each node's argv as the emulator launcher passes it."""

from __future__ import annotations

from dataclasses import dataclass

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.cookbook.kept_files import load_generated
from kimi_runbooks.deploy.launchers.emulator import emulator_argv, server_flags
from kimi_runbooks.paths import PARAMS_DIR
from kimi_runbooks.plan import LaunchPlan, plan

PAGES = {
    "kimi-k3": "f795573d68a06b095c2605328c8fd000e05eda4b",
    "kimi-k2.6": "1d8c2d380caa32eaa80a7849c86c2267ba589042",
}


@dataclass(frozen=True)
class CellCommand:
    label: str
    launch: LaunchPlan
    flags: list[str]
    """The SGLang flags of one server (node) of the cell's plan."""

    def emulator_args(self) -> list[str]:
        """`python -m kimi_runbooks.emulator` arguments as the deploy stage starts it (no python -m)."""
        return emulator_argv(self.launch, host="127.0.0.1", port=1, flags=self.flags)[3:]


def cell_commands() -> list[CellCommand]:
    catalog = load_catalog()
    out: list[CellCommand] = []
    for page, commit in PAGES.items():
        for cell in load_generated(PARAMS_DIR, page, commit)["cells"]:
            if cell["hardware"] not in catalog.platforms:
                continue
            model = next(m.id for m in catalog.models.values() if m.hf_id == cell["model_name"])
            config = {"platform": cell["hardware"], "model": model, "strategy": cell["strategy"]}
            if cell.get("role"):
                config["pd_role"] = cell["role"]
            if cell.get("speculative"):
                config["speculative"] = cell["speculative"] != "none"
            launch = plan({**config, "enable_metrics": True}, catalog)  # as a runbook launches it
            label = "-".join(
                str(p)
                for p in (
                    page,
                    cell["hardware"],
                    cell.get("role", "unified"),
                    cell["strategy"],
                    cell.get("speculative", ""),
                )
            )
            if launch.nodes:
                for node in launch.nodes:
                    words = [str(a) for a in node.argv]
                    start = next(i for i, a in enumerate(words) if a.startswith("--"))
                    out.append(CellCommand(f"{label} ({node.role} {node.node_rank})", launch, words[start:]))
            else:
                out.append(CellCommand(label, launch, server_flags(launch)))
    return out
