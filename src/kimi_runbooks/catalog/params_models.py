"""The shape of every params/ file as pydantic models (platforms, models, rules, deployments,
references; scenarios in scenario_models, cookbook pages in cookbook_models): a typo in a params
file fails at load time with the file and the field. catalog.load reads the folder into these."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from .cookbook_models import Cookbook
from .expression import expression_problems, template_problems
from .flags import knob_of, parse_extra_args

# Re-exported: params/ readers import every params model from here.
from .values import ArgValue, EnvMap, Strict, env_names
from .values import ParamsError as ParamsError

GIB = 1024**3
GB = 1000**3


def _facts_only(problems: list[str]) -> None:
    if problems:
        raise ValueError("; ".join(problems) + ". Fix: use only the facts of catalog/expression.py FACT_NAMES")


def _no_knob_flags(args: list[str]) -> list[str]:
    owned = [(f.flag, owner[1].knob) for f in parse_extra_args(args)[1] if (owner := knob_of(f.flag))]
    if owned:
        raise ValueError(f"extra_args set knob flags {owned}. Fix: set those knobs in the recipe instead")
    return args


RuleExpression = Annotated[str, AfterValidator(lambda v: _facts_only(expression_problems(v)) or v)]
RuleText = Annotated[str, AfterValidator(lambda v: _facts_only(template_problems(v)) or v)]


# --------------------------------------------------------------------------- platforms


class Recipe(Strict):
    """A platform's default launch knobs (the cookbook's choices for that hardware)."""

    model: str
    tp: int
    dp: int | None = None
    ep: int | None = None
    enable_dp_attention: bool = False
    mem_fraction_static: float | None = None
    kv_cache_dtype: str | None = None
    context_length: int | None = None
    env: EnvMap = Field(default_factory=dict)
    extra_args: Annotated[list[str], AfterValidator(_no_knob_flags)] = Field(default_factory=list)
    deployment: str | None = None
    source: str

    @property
    def devices(self) -> int:
        """Accelerators the recipe uses: tp, times dp when dp starts whole replicas."""
        replicas = self.dp if (self.dp and self.dp > 1 and not self.enable_dp_attention) else 1
        return self.tp * replicas


PeakDtype = Literal["bf16", "fp8", "fp4", "int8"]


class Hardware(Strict):
    """Per-device speeds the performance model needs (kimi_runbooks.perfmodel), each sourced.

    Bandwidths are GB/s (10^9 bytes/s) in one direction; peaks are dense (no sparsity) TFLOPS.
    `sources` maps every numeric field name to a public page (or says "unverified").
    """

    perf_family: str
    hbm_bandwidth_gbs: float = Field(gt=0)
    peak_dense_tflops: dict[PeakDtype, float]
    interconnect: str
    interconnect_gbs: float = Field(gt=0)
    inter_node_gbs: float = Field(gt=0)
    scale_up_devices: int | None = Field(default=None, ge=1)
    """Devices that share one scale-up (NVLink) domain across nodes as the platform is racked (GB200 /
    GB300 NVL72: 72): a group of at most this many talks at interconnect_gbs even across nodes.
    None: the domain ends at the node, and a group across nodes is held to inter_node_gbs."""
    sources: dict[str, str]

    @field_validator("sources")
    @classmethod
    def _every_number_sourced(cls, value: dict[str, str]) -> dict[str, str]:
        needed = {"hbm_bandwidth_gbs", "peak_dense_tflops", "interconnect_gbs", "inter_node_gbs"}
        missing = sorted(needed - set(value))
        if missing:
            raise ValueError(f"hardware.sources lacks {missing}: every speed needs a public source")
        return value

    @model_validator(mode="after")
    def _scale_up_sourced(self) -> Hardware:
        if self.scale_up_devices is not None and "scale_up_devices" not in self.sources:
            raise ValueError(
                "hardware.scale_up_devices has no source. Fix: add sources.scale_up_devices (the page that "
                "says how many devices share the NVLink domain)"
            )
        return self


class Platform(Strict):
    id: str
    name: str
    vendor: Literal["nvidia", "amd", "huawei"]
    arch: str
    device_name: str
    memory_gib: float
    memory_source: str
    devices_per_node: int = Field(ge=1)
    """Accelerators in one node as the machine ships (8 GPUs in an HGX or AMD Instinct server, 4 per
    GB200/GB300 compute tray, 16 dies in an Atlas 800 A3); the recipe says how many a plan uses."""
    devices_per_node_source: str | None = None
    cards_per_node: int | None = None
    """Physical cards when one card holds several devices (Ascend A3: 8 cards of 2 dies)."""
    nodes: int = 1
    """Nodes the platform's default recipe spans."""
    fp8: bool
    fp4_formats: list[str] = Field(default_factory=list)
    smi: Literal["nvidia-smi", "rocm-smi", "npu-smi"]
    launcher: Literal["local", "docker", "multi-node"]
    docker_image: str | None = None
    docker_image_source: str | None = None
    default_mem_fraction_static: float
    default_mem_fraction_source: str
    runtime_reserve_gib: float
    runtime_reserve_source: str
    recipe: Recipe
    published_models: list[str]
    hardware: Hardware
    price_per_device_hour: float | None = None  # published $/device-hour (cost figures' default)
    price_source: str | None = None
    notes: list[str] = Field(default_factory=list)

    @property
    def devices(self) -> int:
        return self.devices_per_node * self.nodes


# --------------------------------------------------------------------------- models


class LinearAttention(Strict):
    """The linear-attention layers of a hybrid model (Kimi Delta Attention): their recurrent state
    is a fixed size per request, whatever the context, and SGLang keeps it in its own pool."""

    kind: Literal["kda"]
    num_layers: int = Field(ge=1)
    num_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    short_conv_kernel_size: int = Field(ge=1)
    layer_ids: list[int] | None = None
    """0-based ids of the linear-attention layers; None when no public source gives the pattern
    (the pools need only the counts)."""
    source: str


class ParameterCounts(Strict):
    """Published parameter totals (billions). The performance model reads them where the per-projection
    dimensions are unpublished (a hybrid model): every weight that is not a routed expert is then
    `active_b` minus the active routed experts."""

    total_b: float = Field(gt=0)
    active_b: float = Field(gt=0)
    source: str


class Architecture(Strict):
    """Text-model geometry. A field is None only where no public source gives it (the model
    file's `sources` says why); the memory planner needs only the MLA and linear-attention
    numbers, the performance model all of them."""

    num_hidden_layers: int
    num_attention_heads: int
    hidden_size: int
    kv_lora_rank: int
    q_lora_rank: int | None
    qk_rope_head_dim: int
    qk_nope_head_dim: int | None
    v_head_dim: int | None
    n_routed_experts: int
    num_experts_per_tok: int
    vocab_size: int | None
    max_position_embeddings: int
    moe_intermediate_size: int
    intermediate_size: int | None
    first_k_dense_replace: int
    n_shared_experts: int
    linear_attention: LinearAttention | None = None
    """Set for a hybrid model; every other layer is MLA."""
    routed_expert_hidden_size: int | None = None
    """Width routed experts run at when it is not hidden_size (a latent MoE projects tokens down
    before dispatch); None: hidden_size."""
    parameter_counts: ParameterCounts | None = None
    """Published total / active parameters, for the performance model (see ParameterCounts)."""

    @property
    def mla_layers(self) -> int:
        """Layers that keep paged MLA latent KV (all but the linear-attention ones)."""
        return self.num_hidden_layers - (self.linear_attention.num_layers if self.linear_attention else 0)

    @property
    def hybrid(self) -> bool:
        return self.linear_attention is not None


class DraftModel(Strict):
    path: str
    size_gb: float
    source: str
    env: EnvMap = Field(default_factory=dict)
    """Environment the published EAGLE3 command sets (e.g. SGLANG_ENABLE_SPEC_V2=1 for Kimi-K2.5)."""
    kv_bytes_per_token: int = Field(default=0, ge=0)
    """The draft's own KV per token on every rank (replicated, not split by DCP); 0: not modelled."""
    kv_source: str | None = None


class ReasoningEffortLevels(Strict):
    """The reasoning_effort values a model honours (ordered least to most effort) and its default."""

    levels: list[str] = Field(min_length=1)
    default: str
    source: str

    @model_validator(mode="after")
    def _default_is_a_level(self) -> ReasoningEffortLevels:
        if self.default not in self.levels:
            raise ValueError(f"reasoning_effort.default {self.default!r} is not one of levels {self.levels}")
        return self


class Model(Strict):
    id: str
    hf_id: str
    served_name: str
    family: str = Field(pattern=r"^kimi-k\d+(\.\d+)?$")
    """The Kimi generation (kimi-k2, kimi-k2.6, ...): a label; no code path branches on it."""
    architecture: Architecture
    max_context_length: int
    weight_format: Literal["fp8", "int4", "nvfp4", "mxfp4", "w4a8"]
    quantization_flag: str | None = None
    weight_only_runner: str | None = None
    """A kernel that serves the FP4 weights without FP4 tensor cores (dequantised to BF16, e.g.
    Marlin W4A16), so hardware without the format still runs the checkpoint."""
    checkpoint_gb: float
    checkpoint_source: str
    replicated_weights_gb: float = Field(default=0.0, ge=0.0)
    """Checkpoint weights SGLang keeps whole on every TP rank (ReplicatedLinear layers), counted in
    checkpoint_gb: each rank holds these plus its shard of the rest."""
    replicated_weights_source: str | None = None
    default_kv_cache_dtype: Literal["bf16", "fp8_e4m3"]
    default_kv_cache_dtype_source: str
    multimodal: bool
    reasoning: bool
    reasoning_parser: str | None = None
    """SGLang --reasoning-parser the model is served with; None: kimi_k2 when ``reasoning``."""
    tool_call_parser: str = "kimi_k2"
    thinking: Literal["optional", "always"] = "optional"
    """optional: a request can turn thinking off; always: the model thinks whatever it is asked."""
    reasoning_effort: ReasoningEffortLevels | None = None
    video: bool = False
    """Video content parts (``video_url``) are understood; ``multimodal`` alone means images."""
    preserve_thinking: bool = False
    """The model's earlier reasoning is kept in the conversation it is sent back (K2.7-Code)."""
    requirements: list[str] = Field(default_factory=list)
    """Python packages the checkpoint's remote code needs (e.g. transformers>=4.57.1,<5)."""
    hf_model_type: str = "kimi_k25"
    hf_architectures: list[str] = Field(default_factory=lambda: ["KimiK25ForConditionalGeneration"])
    """The checkpoint config's model_type / architectures, as SGLang's /model_info reports them
    (defaults: the Kimi-K2.5/K2.6 wrapper)."""
    sources: dict[str, str] = Field(default_factory=dict)
    """Field name -> its public source, or 'unverified: <why>'."""
    draft_model: DraftModel | None = None
    """The EAGLE3 draft `--speculative` adds."""
    drafts: list[DraftModel] = Field(default_factory=list)
    """Other drafts the model's published commands name (e.g. Kimi-K3's DSPARK draft): the memory
    plan counts the one a command's --speculative-draft-model-path names."""
    cookbook: Cookbook | None = None
    """The newest kept revision of the model's cookbook page (attached from params/cookbook)."""
    cookbook_revisions: list[Cookbook] = Field(default_factory=list)
    """Every kept revision, newest first."""
    cookbook_seed: str | None = None
    """The commit `--cookbook-revision seed` selects; None: the seed pages' knob-built plan."""
    snippet_recipes: dict[str, Recipe] = Field(default_factory=dict)
    """Platform id -> the model's launch knobs there from its cookbook deployment snippet (attached
    from params/cookbook, cookbook/snippet_recipes.py); a platform not listed uses its own recipe."""
    vendors: list[Literal["nvidia", "amd", "huawei"]]
    notes: list[str] = Field(default_factory=list)

    @property
    def checkpoint_gib(self) -> float:
        return self.checkpoint_gb * GB / GIB

    def recipe_on(self, platform: Platform) -> Recipe:
        """The launch knobs this model starts from on `platform`: its cookbook snippet's when the
        page lists that hardware (snippet_recipes), else the platform's recipe (its default model's)."""
        return self.snippet_recipes.get(platform.id, platform.recipe)

    def draft_named(self, path: str | None) -> DraftModel | None:
        """The draft a command names (its --speculative-draft-model-path), or the EAGLE3 draft when
        it names none; None for a path params/models does not describe."""
        known = [d for d in (self.draft_model, *self.drafts) if d is not None]
        if path is None:
            return self.draft_model
        return next((d for d in known if d.path == path), None)

    @property
    def default_reasoning_parser(self) -> str | None:
        return self.reasoning_parser or ("kimi_k2" if self.reasoning else None)


# --------------------------------------------------------------------------- rules


class RuleScope(Strict):
    """Where a rule applies; an empty list means everywhere."""

    vendors: list[str] = Field(default_factory=list)
    archs: list[str] = Field(default_factory=list)
    platforms: list[str] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    sglang: str | None = None  # a PEP 440 specifier such as "<0.5.10"


class Rule(Strict):
    id: str
    severity: Literal["error", "warning"]
    kind: Literal["rule", "known-issue"] = "rule"
    applies: RuleScope = RuleScope()
    violation: RuleExpression
    message: RuleText
    fix: RuleText
    source: RuleText


class RuleFile(Strict):
    rules: list[Rule]


# --------------------------------------------------------------------------- deployments


class Role(Strict):
    name: Literal["mixed", "prefill", "decode"]
    nodes: int
    entrypoint: str
    env: EnvMap = Field(default_factory=dict)
    args: dict[str, ArgValue]


class Router(Strict):
    entrypoint: str
    args: dict[str, ArgValue]


class Deployment(Strict):
    id: str
    title: str
    platform: str
    model: str
    cards: int
    mode: Literal["pd-mixed", "pd-disaggregation"]
    source: str
    host_setup: list[str] = Field(default_factory=list)
    unset_env: list[str] = Field(default_factory=list)
    source_scripts: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    roles: list[Role]
    router: Router | None = None
    serve_port: int
    benchmark: str | None = None
    targets: dict[str, float | None] = Field(default_factory=dict)
    dataset_label: str | None = None

    @field_validator("env", mode="before")
    @classmethod
    def _env_as_strings(cls, value: Any) -> Any:
        return {k: str(v) for k, v in (value or {}).items()}

    _names = field_validator("env", "unset_env")(env_names)


# --------------------------------------------------------------------------- references


class Reference(BaseModel):
    """A published result file; the kinds differ, so only the common keys are typed."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str
    kind: Literal["speed", "matrix", "table", "targets", "accuracy"]
    platform: str
    model: str
    source: str
