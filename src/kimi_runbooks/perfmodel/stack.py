"""The software stack a result ran on (or a plan will run on), as an input of the performance model.

A reference records it in a `stack:` block (the keys below, no others; unknown values null), else
it is read from the reference's launch command, docker image and launch flags. A plan's stack is
read from its argv and image; `plan --predict ... --stack key=value,...` sets the rest. What the
model does with it: the stack-term keys (`term_keys`) choose which fitted software terms
(factors.py STACK_TERMS) a prediction uses, and the speculative accept length replaces the default
when the scenario gives none.

Nothing is guessed: a value a command does not show stays null, and a null MoE path or attention
backend is keyed by its vendor and precision alone ("default:W4A16"), the release default of that
stack, which is what an unmarked published run used.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._deps import LaunchPlan

ATTENTION_BACKENDS = ("fa3", "flashinfer", "trtllm_mla", "flashmla", "cutlass_mla", "triton", "aiter", "ascend")
MOE_PATHS = (
    "triton",
    "aiter",
    "flydsl",
    "deepep",
    "flashinfer_trtllm",
    "flashinfer_cutlass",
    "cutlass",
    "marlin",
    "ascend",
)
PRECISIONS = ("W4A16", "W4A8", "W8A8", "FP8", "FP4", "BF16")
PRECISION_OF_FORMAT = {"int4": "W4A16", "w4a8": "W4A8", "w8a8": "W8A8", "fp8": "FP8", "nvfp4": "FP4", "mxfp4": "FP4"}
WEIGHT_FORMAT_OF_PRECISION = {"W4A16": "W4", "W4A8": "W4", "W8A8": "W8"}
"""Precision -> the weights' format an expert kernel reads (FP8, FP4 and BF16 are their own)."""
_VERSION = re.compile(r"v?(\d+\.\d+\.\d+(?:\.post\d+)?)")
_MOE_RUNNER = {"flashinfer_mxfp4": "flashinfer_cutlass", "deep_gemm": "cutlass", "auto": None}


class StackError(ValueError):
    """A stack block or --stack string that breaks a rule; the message names it and the fix."""


@dataclass(frozen=True)
class Speculative:
    algorithm: str
    accept_length: float | None = None


@dataclass(frozen=True)
class Stack:
    image: str | None = None
    sglang_version: str | None = None
    attention_backend: str | None = None
    moe_path: str | None = None
    precision: str | None = None
    torch_compile: bool | None = None
    cuda_graphs: bool | None = None
    speculative: Speculative | None = None
    pp: int = 1
    tuned: bool | None = None

    def __post_init__(self) -> None:
        _check("attention_backend", self.attention_backend, ATTENTION_BACKENDS)
        _check("moe_path", self.moe_path, MOE_PATHS)
        _check("precision", self.precision, PRECISIONS)
        if self.pp < 1:
            raise StackError(f"stack: pp must be >= 1 (got {self.pp}). Fix: pp=2 for two pipeline stages")
        if self.speculative and self.speculative.accept_length is not None and self.speculative.accept_length < 1:
            raise StackError("stack: speculative accept_length must be >= 1. Fix: e.g. accept_length: 2.9")

    # ------------------------------------------------------------ what the model keys on
    def moe_key(self) -> str:
        """The MoE kernel path and precision: which expert-kernel terms apply ("tuned" apart)."""
        path = self.moe_path or "default"
        return f"{path}:{self.precision or 'unknown'}" + (":tuned" if self.tuned else "")

    def kernel_key(self) -> str:
        """The expert kernel's terms (factors.POOLED_KINDS): MoE path, the weights' format and "tuned".
        The activation precision is not part of it: W4A16 and W4A8 on one kernel path read the same
        4-bit weight bytes with the same tiles and schedule, and differ in the MMA they run (bf16 or
        int8), which the step model takes from the dtype's own peak (hardware.expert_dtype). So the
        ROCm blog's W4A16 and W4A8 columns, one FlyDSL kernel with "only the compute path" changed,
        share one set of kernel terms (issue 43 item 3)."""
        path = self.moe_path or "default"
        weights = WEIGHT_FORMAT_OF_PRECISION.get(self.precision or "", self.precision or "unknown")
        return f"{path}:{weights}" + (":tuned" if self.tuned else "")

    def attention_key(self, vendor: str) -> str:
        return f"{vendor}:{self.attention_backend or 'default'}"

    def overhead_key(self, vendor: str) -> str:
        """Per-layer fixed cost: launch/sync overhead of the stack's graph mode, one term for every
        vendor (CUDA and HIP graphs replay the same launch sequence; AMD's budget, 10 runs / 3, is
        spent on its own terms). Tried 2026-12-05 with a term per vendor: the AMD term went to the top
        of its range (400 us, absorbing what the stock AMD kernels lose) and Hopper's page-out TPOT at
        concurrency 16-100 got worse, so it stays shared. `vendor` is kept for that split.
        torch.compile is not a mode of its own: SGLang's --enable-torch-compile compiles the model
        that its CUDA/HIP graphs then capture, so decode replays a graph either way (fitted apart on
        2026-12-07, the two terms came out 178 and 185 us per layer); one "graphs" term lets the AMD
        tuned pages' per-layer cost be fitted with every other graph-replay run instead of competing
        for AMD's own budget (issue 43: AMD page-out TPOT error 54% -> 40%)."""
        return "eager" if self.cuda_graphs is False and not self.torch_compile else "graphs"

    def label(self) -> str:
        """A short name for tables (coverage per stack)."""
        parts = [self.moe_key()]
        if self.attention_backend:
            parts.append(self.attention_backend)
        if self.torch_compile:
            parts.append("compile")
        if self.speculative:
            parts.append(self.speculative.algorithm)
        if self.pp > 1:
            parts.append(f"pp{self.pp}")
        return "/".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


STACK_KEYS = tuple(f.name for f in fields(Stack))
"""The keys of a `stack:` block: Stack's fields, so a new field is a new key without a second list to keep."""


def vendor_of(family: str) -> str:
    """nvidia-hopper -> nvidia; amd-cdna -> amd; huawei-ascend -> huawei."""
    return family.split("-", 1)[0]


def _check(key: str, value: str | None, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        raise StackError(f"stack: {key} '{value}' is not one of {', '.join(allowed)}. Fix: use one of them or null")


def _bool(key: str, value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    if text in ("null", "none", ""):
        return None
    raise StackError(f"stack: {key} must be true or false (got {value!r}). Fix: {key}=true")


def stack_from_dict(data: dict[str, Any]) -> Stack:
    """A `stack:` block (params/references) or a spec's stack mapping."""
    unknown = sorted(set(data) - set(STACK_KEYS))
    if unknown:
        raise StackError(f"stack: unknown keys {unknown}. Fix: keep to {', '.join(STACK_KEYS)}")
    spec = data.get("speculative")
    if isinstance(spec, dict):
        accept = spec.get("accept_length")
        spec = Speculative(str(spec["algorithm"]), float(accept) if accept is not None else None)
    elif spec is not None:
        raise StackError("stack: speculative is {algorithm: ..., accept_length: ...} or null")
    return Stack(
        image=data.get("image"),
        sglang_version=str(data["sglang_version"]) if data.get("sglang_version") is not None else None,
        attention_backend=data.get("attention_backend"),
        moe_path=data.get("moe_path"),
        precision=data.get("precision"),
        torch_compile=_bool("torch_compile", data.get("torch_compile")),
        cuda_graphs=_bool("cuda_graphs", data.get("cuda_graphs")),
        speculative=spec,
        pp=int(data.get("pp") or 1),
        tuned=_bool("tuned", data.get("tuned")),
    )


def _flag_values(argv: list[str]) -> dict[str, str | bool]:
    out: dict[str, str | bool] = {}
    for i, word in enumerate(argv):
        if not word.startswith("--"):
            continue
        name, eq, value = word.partition("=")
        name = name.replace("_", "-")
        if eq:
            out[name] = value
        elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            out[name] = argv[i + 1]
        else:
            out[name] = True
    return out


def stack_from_launch(
    argv: list[str], image: str | None, weight_format: str | None, version: str | None = None
) -> Stack:
    """What a launch command shows: flags, the image's version tag, the checkpoint's precision."""
    flags = _flag_values(argv)
    runner = flags.get("--moe-runner-backend")
    moe = _MOE_RUNNER.get(str(runner), str(runner)) if isinstance(runner, str) else None
    if flags.get("--moe-a2a-backend") == "deepep":
        moe = "deepep"
    attention = flags.get("--attention-backend")
    decode_attention = flags.get("--decode-attention-backend")
    backend = str(decode_attention or attention) if (decode_attention or attention) else None
    algorithm = flags.get("--speculative-algorithm")
    match = _VERSION.search(image.rsplit(":", 1)[-1]) if image and ":" in image else None
    pp = flags.get("--pp-size") or flags.get("--pp")
    return Stack(
        image=image,
        sglang_version=version or (match.group(1) if match else None),
        attention_backend=backend if backend in ATTENTION_BACKENDS else None,
        moe_path=moe if moe in MOE_PATHS else None,
        precision=PRECISION_OF_FORMAT.get(weight_format or "", "BF16" if weight_format == "bf16" else None),
        torch_compile=True if flags.get("--enable-torch-compile") else None,
        cuda_graphs=False if flags.get("--disable-cuda-graph") else None,
        speculative=Speculative(str(algorithm)) if isinstance(algorithm, str) else None,
        pp=int(pp) if isinstance(pp, str) and pp.isdigit() else 1,
    )


def reference_stack(ref: Any, weight_format: str | None, row_launch: dict[str, Any] | None = None) -> Stack:
    """A reference's stack: its `stack:` block (a row's `launch.stack` wins), else its command."""
    block = (row_launch or {}).get("stack") or getattr(ref, "stack", None)
    if isinstance(block, dict):
        stack = stack_from_dict(block)
        if stack.precision is None:
            stack = replace(stack, precision=PRECISION_OF_FORMAT.get(weight_format or ""))
        return stack
    command = str((row_launch or {}).get("launch_command") or getattr(ref, "launch_command", "") or "")
    try:
        argv = shlex.split(command)
    except ValueError:
        argv = command.split()
    extra = [str(a) for a in ((getattr(ref, "launch", None) or {}).get("extra_args") or [])]
    version = getattr(ref, "sglang_version", None)
    clean = str(version) if version and _VERSION.fullmatch(str(version)) else None
    return stack_from_launch(argv + extra, getattr(ref, "docker_image", None), weight_format, clean)


def plan_stack(plan: LaunchPlan) -> Stack:
    """A plan's stack: its flags, image and checkpoint, at the SGLang version the plan decided
    (PlanConfig.sglang_version, the one that selects its rules), not the image tag's."""
    return stack_from_launch(plan.argv, plan.docker_image, plan.model.weight_format, plan.config.sglang_version)


def parse_stack_spec(text: str, base: Stack | None = None) -> Stack:
    """`--stack moe_path=flydsl,precision=W4A8,torch_compile=true,accept_length=2.9,pp=2`."""
    stack = base or Stack()
    values: dict[str, Any] = {}
    for raw in (t.strip() for t in text.split(",")):
        if not raw:
            continue
        key, eq, value = (p.strip() for p in raw.partition("="))
        if not eq:
            raise StackError(f"--stack: '{raw}' is not key=value. Fix: e.g. --stack moe_path=flydsl,precision=W4A8")
        values[key] = None if value.lower() in ("null", "none") else value
    accept = values.pop("accept_length", None)
    algorithm = values.pop("speculative", None)
    unknown = sorted(set(values) - set(STACK_KEYS))
    if unknown:
        raise StackError(f"--stack: unknown keys {unknown}. Fix: keep to {', '.join(STACK_KEYS)}, accept_length")
    updates: dict[str, Any] = {}
    for key, value in values.items():
        if key in ("torch_compile", "cuda_graphs", "tuned"):
            updates[key] = _bool(key, value)
        elif key == "pp":
            if value is None or not str(value).isdigit():
                raise StackError(f"--stack: pp must be a whole number (got {value}). Fix: pp=2")
            updates[key] = int(value)
        else:
            updates[key] = value
    spec = stack.speculative
    if algorithm is not None:
        spec = Speculative(str(algorithm), spec.accept_length if spec else None)
    if accept is not None:
        try:
            length = float(accept)
        except ValueError:
            raise StackError(
                f"--stack: accept_length must be a number (got {accept}). Fix: accept_length=2.9"
            ) from None
        spec = Speculative(spec.algorithm if spec else "EAGLE3", length)
    return replace(stack, **updates, speculative=spec)
