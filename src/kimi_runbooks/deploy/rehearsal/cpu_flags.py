"""Which of a plan's SGLang flags and env a CPU rehearsal passes on, and why the others cannot apply.

A rehearsal starts SGLang itself on this machine's CPU (SGLANG_USE_CPU_ENGINE=1) serving a tiny
checkpoint of the plan's model. Serving behaviour (parsers, scheduling, caching, limits, the API key)
is passed as the plan has it, so SGLang's own parser and server judge it. What shards the model over
accelerators, picks a GPU/NPU kernel, loads the real weights or tunes a NIC cannot apply on one CPU
process; each such flag and env variable is kept with the reason (`Disposition`), shown in the
report, never dropped silently. A flag this table does not know is passed: SGLang decides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from ...plan import LaunchPlan, NodeCommand
from ...plan.server_options import OptionTable, option_table
from ...plan.shell import expand_word

Action = Literal["passed", "replaced", "added", "not applicable"]

PARALLEL = "one CPU process serves the tiny model unsharded (tp 1); the plan spreads the real model over accelerators"
KERNEL = "a GPU/NPU kernel or graph choice; SGLang's CPU engine runs its torch-native paths (attention torch_native)"
WEIGHTS = "describes the real checkpoint; the rehearsal serves a tiny BF16 checkpoint generated for this run"
MULTI_NODE = "multi-node wiring; the rehearsal is one process on this machine"
SPECULATIVE = "speculative decoding needs a draft checkpoint and kernels the CPU stand-in for sgl_kernel does not have"
MEMORY = "sized for the accelerator's memory; the CPU rehearsal sizes its KV pool with --max-total-tokens"
PD = "a prefill/decode role of a disaggregated deployment; the rehearsal is one mixed server"
HOST_CACHE = "host-memory KV tiers move KV with kernels the CPU stand-in for sgl_kernel does not have"
ENV = "tunes the platform's accelerators, collectives or network; SGLang's CPU engine reads none of it"

NOT_APPLICABLE: dict[str, str] = {
    **dict.fromkeys(
        (
            "tp_size",
            "dp_size",
            "ep_size",
            "pp_size",
            "dcp_size",
            "attn_cp_size",
            "moe_dp_size",
            "enable_dp_attention",
            "enable_dp_lm_head",
            "moe_a2a_backend",
            "deepep_mode",
            "deepep_config",
            "moe_dense_tp_size",
            "ep_num_redundant_experts",
            "enable_eplb",
            "base_gpu_id",
        ),
        PARALLEL,
    ),
    **dict.fromkeys(
        (
            "attention_backend",
            "decode_attention_backend",
            "prefill_attention_backend",
            "mm_attention_backend",
            "sampling_backend",
            "moe_runner_backend",
            "fp8_gemm_runner_backend",
            "fp4_gemm_runner_backend",
            "disable_cuda_graph",
            "cuda_graph_max_bs",
            "cuda_graph_bs",
            "cuda_graph_bs_decode",
            "cuda_graph_max_bs_decode",
            "enable_torch_compile",
            "torch_compile_max_bs",
            "enable_symm_mem",
            "enable_nccl_nvls",
            "enable_flashinfer_allreduce_fusion",
            "disable_custom_all_reduce",
            "enable_two_batch_overlap",
            "enable_single_batch_overlap",
        ),
        KERNEL,
    ),
    **dict.fromkeys(("model_path", "quantization", "kv_cache_dtype", "revision", "load_format"), WEIGHTS),
    **dict.fromkeys(("nnodes", "node_rank", "dist_init_addr", "dist_timeout"), MULTI_NODE),
    **dict.fromkeys(("mem_fraction_static", "max_total_tokens"), MEMORY),
    **dict.fromkeys(("enable_hierarchical_cache", "hicache_ratio", "hicache_size"), HOST_CACHE),
}
NOT_APPLICABLE_PREFIXES: dict[str, str] = {
    "speculative_": SPECULATIVE,
    "disaggregation_": PD,
    "hicache_": HOST_CACHE,
    "cuda_graph_": KERNEL,
    "enable_flashinfer_": KERNEL,
    "deepep_": PARALLEL,
    "mamba_": WEIGHTS,
}


@dataclass(frozen=True)
class Disposition:
    """One flag (or env variable) of the plan and what the rehearsal did with it."""

    item: str
    values: tuple[str, ...]
    action: Action
    reason: str = ""

    def as_row(self) -> dict[str, Any]:
        row = asdict(self)
        row["values"] = list(self.values)
        return row


@dataclass(frozen=True)
class FlagGroup:
    flag: str
    """As the plan wrote it (`--tp`)."""
    dest: str
    """SGLang's name for it (`tp_size`): what decides."""
    values: tuple[str, ...]


@dataclass(frozen=True)
class OwnFlag:
    """A flag the rehearsal sets itself (replacing the plan's value of the same option, if any)."""

    flag: str
    value: str | None
    reason: str


def group_flags(flags: Sequence[str], table: OptionTable | None = None) -> list[FlagGroup]:
    """`--flag v1 v2 --switch --flag=v` as (flag, dest, values) groups, the way argparse reads them:
    a switch takes nothing, an option one value (or its nargs), an unknown flag what follows it."""
    table = table or option_table()
    groups: list[FlagGroup] = []
    i = 0
    while i < len(flags):
        token = flags[i]
        i += 1
        flag, _, inline = token.partition("=")
        option, _ = table.find(flag)
        values: list[str] = [inline] if inline else []
        if not inline and (option is None or option.kind != "switch"):
            while i < len(flags) and not flags[i].startswith("--"):
                values.append(flags[i])
                i += 1
                if option is not None and option.nargs is None:
                    break
        groups.append(FlagGroup(flag, option.dest if option else flag, tuple(values)))
    return groups


def reason_not_applicable(dest: str) -> str | None:
    if dest in NOT_APPLICABLE:
        return NOT_APPLICABLE[dest]
    return next((why for prefix, why in NOT_APPLICABLE_PREFIXES.items() if dest.startswith(prefix)), None)


@dataclass(frozen=True)
class CpuFlags:
    """The plan's flags split for a CPU rehearsal: what goes to SGLang, and every decision."""

    passed: list[str]
    dispositions: list[Disposition]

    def not_applicable(self) -> list[Disposition]:
        return [d for d in self.dispositions if d.action == "not applicable"]


def server_flags(argv: Sequence[str]) -> list[str]:
    """The plan's flags without the entrypoint (`sglang serve`, `python3 -m sglang.launch_server`)."""
    start = next((i for i, a in enumerate(argv) if a.startswith("--")), len(argv))
    return list(argv[start:])


def cpu_flags(
    plan: LaunchPlan, environ: Mapping[str, str], ours: Sequence[OwnFlag], node: NodeCommand | None = None
) -> CpuFlags:
    """Decide each of the plan's flags and env variables for a CPU rehearsal that sets `ours` itself;
    with `node`, that node's (one replica of a `replicas` plan: its port, its devices)."""
    table = option_table()
    argv, launch_env = (node.argv, node.env) if node is not None else (plan.argv, plan.launch_env)
    own = {_dest(o.flag, table): o for o in ours}
    passed: list[str] = []
    rows: list[Disposition] = []
    for group in group_flags(server_flags(argv), table):
        why = reason_not_applicable(group.dest)
        if group.dest in own:
            mine = own[group.dest]
            now = f"{mine.flag} {mine.value}" if mine.value is not None else mine.flag
            rows.append(Disposition(group.flag, group.values, "replaced", f"{now}: {mine.reason}"))
        elif why is not None:
            rows.append(Disposition(group.flag, group.values, "not applicable", why))
        else:
            passed += [group.flag, *(expand_word(v, dict(environ)) for v in group.values)]
            shown = tuple("<key>" if group.dest == "api_key" else v for v in group.values)
            rows.append(Disposition(group.flag, shown, "passed"))
    replaced = {_dest(r.item, table) for r in rows if r.action == "replaced"}
    for dest, mine in own.items():
        passed += [mine.flag] if mine.value is None else [mine.flag, mine.value]
        if dest not in replaced:
            rows.append(Disposition(mine.flag, () if mine.value is None else (mine.value,), "added", mine.reason))
    for name, value in launch_env.items():
        rows.append(Disposition(f"env {name}", (value,), "not applicable", ENV))
    return CpuFlags(passed, rows)


def _dest(flag: str, table: OptionTable) -> str:
    option, _ = table.find(flag)
    return option.dest if option else flag
