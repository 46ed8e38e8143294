"""Predict a plan's speed for a scenario: TTFT, TPOT, throughput, with an uncertainty band.

`Predictor(plan).predict(Scenario(...))` combines the pieces: serving.py (what the plan runs
on), step.py (one forward pass from bytes, FLOPs and collectives), queueing.py (batching, KV
cap, queueing) and the calibration (efficiency factors per platform family and the band from
the leave-one-document-out validation). Every prediction is a model estimate, never a
measurement; `low`/`high` say how far published results have strayed from it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import Any

from ._deps import LaunchPlan, Model, load_catalog
from .attribution import Attribution, add, with_remainder
from .bands import apply_band
from .caveats import accept_basis, role_note
from .comm import kv_transfer_s
from .factors import LINK_EFFICIENCY, Factors, borrowed_from
from .hardware import dense_dtype, expert_dtype, hardware_spec
from .pipeline import Stages, decode_cycle, pipelined_prefill
from .queueing import Outcome, Timing, closed_loop, open_loop, steady_decode
from .serving import Pool, Serving, serving_from_plan
from .shape_basis import ShapeBasis, shape_basis
from .stack import PRECISION_OF_FORMAT, Stack, plan_stack
from .step import Dtypes, PoolShape, decode_step, prefill_chunks
from .store import FIRST_PRINCIPLES_BAND_WIDENING, Calibration, load_calibration, support_text

DEFAULT_ACCEPT_LENGTH = 2.5
"""Tokens per speculative (EAGLE3 or DSPARK) iteration when the scenario and stack give none: an
assumption (caveats.ASSUMED_ACCEPT says why, and every prediction that uses it says so); pass accept= to override."""

__all__ = ["FIRST_PRINCIPLES_BAND_WIDENING", "Prediction", "Predictor", "Scenario", "ScenarioError", "predict"]

PRECISION_DTYPE = {"W4A16": "bf16", "W4A8": "int8", "W8A8": "int8", "FP8": "fp8", "FP4": "fp4", "BF16": "bf16"}
"""The GEMM precision of a stack's weight/activation precision (hardware.HardwareSpec.peak falls back to
bf16 where the platform lists no such peak)."""

STEADY_DECODE_EXTRA_CONTEXT = 1000
"""A fixed-duration decode test has generated about this many tokens past its prompt on
average while it measures (llm-inference-bench: 30 s at ~50 tok/s after warm-up); a test that
decodes its whole output (bench_one_batch_server) averages half of it, if that is less."""


@dataclass(frozen=True)
class Scenario:
    input_len: int
    output_len: int
    concurrency: int | None = None
    request_rate: float | None = None  # requests/s (open loop); else closed loop at concurrency
    prefix_hit: float = 0.0  # fraction of the input already in the prefix cache
    num_prompts: int | None = None  # a finite benchmark drains at the end
    accept_length: float | None = None  # speculative decoding only
    steady_decode: bool = False  # every request decoding, none arriving (decode matrix cell)
    fixed_lengths: bool = False  # every request exactly input_len/output_len (--random-range-ratio 1.0)

    def __post_init__(self) -> None:
        problems = []
        if self.input_len < 1 or self.output_len < 1:
            problems.append("input and output lengths must be >= 1")
        if (self.concurrency is None) == (self.request_rate is None):
            problems.append("give exactly one of concurrency (c=) or request rate (rate=)")
        if self.concurrency is not None and self.concurrency < 1:
            problems.append("concurrency must be >= 1")
        if self.request_rate is not None and not self.request_rate > 0:
            problems.append("request rate must be > 0 requests/s")
        if not 0.0 <= self.prefix_hit < 1.0:
            problems.append("prefix hit rate must be in [0, 1)")
        if self.accept_length is not None and self.accept_length < 1:
            problems.append("accept length must be >= 1")
        if problems:
            raise ScenarioError(problems)


class ScenarioError(ValueError):
    """A scenario that cannot be predicted; `problems` name the rules it breaks."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(
            "bad scenario: "
            + "; ".join(problems)
            + ". Fix: e.g. Scenario(input_len=1000, output_len=1000, concurrency=16)"
        )


@dataclass
class Prediction:
    input_len: int
    output_len: int
    concurrency: int | None
    request_rate: float | None
    prefix_hit: float
    median_ttft_ms: float
    median_tpot_ms: float
    median_itl_ms: float
    output_throughput: float
    total_throughput: float
    output_tok_s_per_device: float
    tok_s_per_user: float
    running_requests: float
    kv_capacity_requests: int
    """Requests that run at once (KV pool, SGLang's max_running_requests, the flag or 48 under speculative
    decoding, and a hybrid model's state pool together)."""
    kv_limited: bool
    saturated: bool
    bound: str
    devices: int
    family: str
    calibrated_family: bool
    """Fitted to measured results of this family and weight format: the run-out band applies."""
    calibration_basis: str = "measured"
    """measured | slo-targets-only (Ascend: fitted to published ceilings, never to a
    measurement, so it takes a new family's band) | borrowed (no results of its own) |
    unfitted-stack (a software-stack term no fitted reference ran: the page-out band widened,
    `unfitted_terms` names them) | first-principles (no fitted result of a model with this
    architecture: geometry and hardware only, the widest band)."""
    stack: dict[str, Any] = field(default_factory=dict)
    """The software stack predicted for (stack.py): read from the plan, set with --stack."""
    unfitted_terms: list[str] = field(default_factory=list)
    borrowed: dict[str, list[str]] = field(default_factory=dict)
    """unfitted term -> the fitted terms of its weight format it borrows (factors.borrowed_from);
    a term not listed stays at its prior."""
    fixed_lengths: bool = False
    capacity_limit: str = "kv-pool"
    """What sets kv_capacity_requests: kv-pool, max-running-requests or state-pool (a hybrid model's
    recurrent-state pool, SGLang's resolve_max_num_reqs)."""
    low: dict[str, float] = field(default_factory=dict)
    high: dict[str, float] = field(default_factory=dict)
    label: str = "predicted"
    pages: int = 0
    """Public pages of this family and stack the calibration was fitted on (store.Calibration.pages)."""
    band_basis: str = "first principles"
    """What sizes the band: "2 pages, same stack" / "one page" / "first principles" (store.support_text)."""
    tpot_why: Attribution | None = None
    """Median TPOT split into the model's terms (attribution.CATEGORIES); `bound` is its largest."""
    ttft_why: Attribution | None = None
    """Median TTFT split the same way: the prefill's terms, the KV transfer (PD), queueing."""
    shape_basis: str = ""
    """What validates the plan's shape (pipeline stages, several nodes, PD pools): which published
    result, or that none does; "" for a single-node tp plan (the calibration basis covers it)."""
    accept_length: float | None = None
    """Tokens per speculative iteration predicted with (None without speculative decoding)."""
    accept_basis: str = ""
    """Where accept_length came from: given (--predict accept=, --stack accept_length=) or assumed
    (caveats.accept_basis)."""
    role_note: str = ""
    """caveats.ROLE_ALONE for a lone PD-role plan; "" otherwise."""

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key, value in list(out.items()):
            if isinstance(value, float):
                out[key] = _round(value)
        out["low"] = {k: _round(v) for k, v in self.low.items()}
        out["high"] = {k: _round(v) for k, v in self.high.items()}
        for key in ("tpot_why", "ttft_why"):
            why: Attribution | None = getattr(self, key)
            out[key] = None if why is None else {"bound": why.bound, "shares": why.as_dict()}
        return out


def _round(value: float) -> float | None:
    if not math.isfinite(value):
        return None
    return float(f"{value:.4g}")


class Predictor:
    """One plan's performance model (built once, asked for many scenarios)."""

    def __init__(
        self,
        plan: LaunchPlan,
        calibration: Calibration | None = None,
        factors: Factors | None = None,
        stack: Stack | None = None,
    ) -> None:
        self.plan = plan
        self.serving: Serving = serving_from_plan(plan)
        hw = hardware_spec(plan.platform)
        # collectives move the link's per-direction figure times hw.link (factors.RANGES, fixed)
        self.hw = replace(
            hw,
            link_bytes_per_s=hw.link_bytes_per_s * LINK_EFFICIENCY,
            inter_node_bytes_per_s=hw.inter_node_bytes_per_s * LINK_EFFICIENCY,
        )
        self.family = self.hw.family
        if calibration is None:
            calibration = load_calibration(load_catalog().root)
        self.calibration = calibration
        self.stack = stack or plan_stack(plan)
        self.factors = factors or calibration.factors(self.family, self.stack)
        expert = "bf16" if self.serving.decode_pool.weight_only_experts else expert_dtype(plan.model, plan.platform)
        if self.stack.precision and self.stack.precision != PRECISION_OF_FORMAT.get(plan.model.weight_format):
            expert = PRECISION_DTYPE[self.stack.precision]  # --stack precision=W4A8: the experts' GEMMs run int8
        self.dtypes = Dtypes(dense=dense_dtype(plan.model, plan.platform), expert=expert)
        self.first_principles = _architecture_unfitted(plan.model, calibration)

    @property
    def calibrated_family(self) -> bool:
        if self.first_principles:
            return False
        return self.calibration.validated(self.family, self.stack)

    @cached_property
    def _shape(self) -> ShapeBasis:
        return shape_basis(self.plan, self.serving, self.calibration)

    @property
    def shape_basis(self) -> str:
        """What validates this plan's shape (shape_basis.shape_basis); "" for a single-node tp plan."""
        return self._shape.text

    @property
    def basis(self) -> str:
        if self.first_principles:
            return "first-principles"
        return self.calibration.basis(self.family, self.stack)

    # ---------------------------------------------------------------- pieces
    def shape(self, pool: Pool) -> PoolShape:
        return PoolShape(
            tp=pool.tp,
            attention_ranks=pool.attention_ranks,
            ep=pool.ep,
            spans_nodes=pool.spans_nodes,
            pp=pool.pp,
            stage_crosses_nodes=pool.stage_crosses_nodes,
        )

    def prefill_parts(self, pool: Pool, input_len: float, prefix_hit: float = 0.0) -> tuple[dict[str, float], float]:
        """(one request's prefill alone, split into attribution terms; seconds the pool is busy with it)."""
        cached = input_len * prefix_hit
        new = input_len - cached
        shape = self.shape(pool)
        passes = prefill_chunks(
            pool.geometry, self.hw, self.dtypes, self.factors, shape, new, cached, pool.chunked_prefill
        )
        parts = [p.parts() for p in passes]
        if pool.pp == 1:
            whole = add(*parts)
            return whole, sum(whole.values())
        chunk = float(pool.chunked_prefill)
        tokens = [min(chunk, new - i * chunk) for i in range(len(passes))] if new > 0 else [1.0]
        stages = Stages(pool.pp, pool.geometry.layers)
        return pipelined_prefill(stages, parts, tokens, pool.geometry.hidden, self.hw, shape)

    def prefill_seconds(self, pool: Pool, input_len: float, prefix_hit: float = 0.0) -> float:
        """One request's prefill alone (its latency: prefill_parts, summed)."""
        return sum(self.prefill_parts(pool, input_len, prefix_hit)[0].values())

    def _pass_parts(self, pool: Pool, batch: float, mean_context: float) -> dict[str, float]:
        """One all-layer decode (or speculative verify + draft) pass of one replica at `batch`."""
        g, f = pool.geometry, self.factors
        shape = self.shape(pool)
        if pool.speculative is None:
            return decode_step(g, self.hw, self.dtypes, f, shape, batch, mean_context).parts()
        verify = decode_step(
            g, self.hw, self.dtypes, f, shape, batch, mean_context, tokens_per_request=pool.speculative.draft_tokens
        ).parts()
        draft_bytes = self.plan.model.draft_model.size_gb * 1e9 if self.plan.model.draft_model else 0.0
        n = pool.speculative.num_steps
        draft = {
            "fixed overhead": n * 2 * f.overhead_us * 1e-6,
            "weight streaming": n * draft_bytes / pool.tp / (self.hw.hbm_bytes_per_s * f.eta_bw),
        }
        return add(verify, draft)

    def iteration_parts(self, pool: Pool, batch: float, mean_context: float) -> dict[str, float]:
        """One decode iteration of the whole pool at `batch` running requests, split into
        attribution terms (their sum is iteration_seconds); a pipelined pool is a cycle over its
        stages (pipeline.decode_cycle)."""
        per_replica = max(batch / pool.replicas, 1.0)
        if pool.pp == 1:
            return self._pass_parts(pool, per_replica, mean_context)
        tokens = pool.speculative.draft_tokens if pool.speculative is not None else 1
        return decode_cycle(
            Stages(pool.pp, pool.geometry.layers),
            per_replica,
            tokens,
            lambda b: self._pass_parts(pool, b, mean_context),
            pool.geometry.hidden,
            self.hw,
            self.shape(pool),
        )

    def iteration_seconds(self, pool: Pool, batch: float, mean_context: float) -> float:
        """One decode iteration of the whole pool at `batch` running requests (iteration_parts, summed)."""
        return sum(self.iteration_parts(pool, batch, mean_context).values())

    @staticmethod
    def decode_context(scenario: Scenario) -> float:
        """Mean context a decode step reads (STEADY_DECODE_EXTRA_CONTEXT for a steady-decode test)."""
        half_output = scenario.output_len / 2.0
        return scenario.input_len + (
            min(STEADY_DECODE_EXTRA_CONTEXT, half_output) if scenario.steady_decode else half_output
        )

    def accept_length(self, scenario: Scenario) -> float:
        decode = self.serving.decode_pool
        if decode.speculative is None:
            return 1.0
        spec = self.stack.speculative  # the scenario's accept length, else the stack's, else the default
        given = scenario.accept_length or (spec.accept_length if spec else None) or DEFAULT_ACCEPT_LENGTH
        return min(given, float(decode.speculative.draft_tokens))

    def accept_basis(self, scenario: Scenario) -> str:
        """Where accept_length(scenario) came from (caveats.accept_basis); "" without speculative decoding."""
        spec = self.serving.decode_pool.speculative
        if spec is None:
            return ""
        stacked = self.stack.speculative.accept_length if self.stack.speculative else None
        return accept_basis(scenario.accept_length, stacked, self.accept_length(scenario), spec.draft_tokens)

    def timing(self, scenario: Scenario) -> Timing:
        s = self.serving
        decode, prefill = s.decode_pool, s.prefill_pool
        ctx = self.decode_context(scenario)
        accept = self.accept_length(scenario)
        transfer = 0.0
        if s.disaggregated:
            transfer = kv_transfer_s(scenario.input_len * decode.geometry.kv_bytes_per_token, self.hw)
        occupancy = self.prefill_parts(prefill, scenario.input_len, scenario.prefix_hit)[1] if prefill.pp > 1 else 0.0
        return Timing(
            prefill=self.prefill_seconds(prefill, scenario.input_len, scenario.prefix_hit),
            token_time=lambda b: self.iteration_seconds(decode, b, ctx) / accept,
            step_time=lambda b: self.iteration_seconds(decode, b, ctx),
            transfer=transfer,
            capacity=decode.capacity_requests(scenario.input_len + scenario.output_len),
            disaggregated=s.disaggregated,
            prefill_lanes=prefill.attention_ranks * prefill.replicas,
            prefill_occupancy=occupancy,
        )

    def explain(self, scenario: Scenario, o: Outcome, t: Timing) -> tuple[Attribution, Attribution]:
        """(TPOT, TTFT) of an outcome split into the model's terms: the decode iteration at the
        running batch (per token: over the accept length), the rest of TPOT prefill stalls; the
        request's own prefill, the PD KV transfer and half a decode step, the rest of TTFT queueing."""
        decode, prefill = self.serving.decode_pool, self.serving.prefill_pool
        step = self.iteration_parts(decode, o.running, self.decode_context(scenario))
        tpot = with_remainder("TPOT", add(step, scale=1.0 / self.accept_length(scenario)), o.tpot_s, "prefill stalls")
        own = self.prefill_parts(prefill, scenario.input_len, scenario.prefix_hit)[0]
        first = add(own, {"communication": t.transfer})
        if not scenario.steady_decode:
            first = add(first, add(step, scale=0.5))
        return tpot, with_remainder("TTFT", first, o.ttft_s, "queueing")

    # ---------------------------------------------------------------- the answer
    def outcome(self, scenario: Scenario) -> tuple[Outcome, Timing]:
        t = self.timing(scenario)
        if t.capacity < 1:
            t = replace(t, capacity=0)
            return Outcome(math.inf, math.inf, math.inf, 0.0, 0.0, 0.0, 0.0, True, True), t
        if scenario.steady_decode:
            return steady_decode(t, scenario.concurrency or 1), t
        if scenario.request_rate is not None:
            return open_loop(t, scenario.request_rate, scenario.output_len), t
        return (
            closed_loop(
                t, scenario.concurrency or 1, scenario.output_len, scenario.num_prompts, scenario.fixed_lengths
            ),
            t,
        )

    def predict(self, scenario: Scenario) -> Prediction:
        o, t = self.outcome(scenario)
        devices = self.serving.devices
        out_tok_s = o.output_tok_s
        total = out_tok_s * (scenario.input_len + scenario.output_len) / scenario.output_len
        decode = self.serving.decode_pool
        tpot_why, ttft_why = self.explain(scenario, o, t) if t.capacity else (None, None)
        unfitted = self.calibration.unfitted_terms(self.family, self.stack)
        p = Prediction(
            input_len=scenario.input_len,
            output_len=scenario.output_len,
            concurrency=scenario.concurrency,
            request_rate=scenario.request_rate,
            prefix_hit=scenario.prefix_hit,
            median_ttft_ms=o.ttft_s * 1000,
            median_tpot_ms=o.tpot_s * 1000,
            median_itl_ms=o.itl_s * 1000,
            output_throughput=out_tok_s,
            total_throughput=total,
            output_tok_s_per_device=out_tok_s / devices,
            tok_s_per_user=1000.0 / (o.tpot_s * 1000) if o.tpot_s > 0 else math.nan,
            running_requests=o.running,
            kv_capacity_requests=t.capacity,
            kv_limited=o.kv_limited,
            saturated=o.saturated,
            bound=tpot_why.bound if tpot_why is not None and tpot_why.bound else "kv-capacity",
            devices=devices,
            family=self.family,
            calibrated_family=self.calibrated_family,
            calibration_basis=self.basis,
            fixed_lengths=scenario.fixed_lengths,
            capacity_limit=decode.capacity_limit(scenario.input_len + scenario.output_len),
            tpot_why=tpot_why,
            ttft_why=ttft_why,
            shape_basis=self.shape_basis,
            stack=self.stack.as_dict(),
            unfitted_terms=unfitted,
            borrowed={t: src for t in unfitted if (src := self._borrowed(t))},
            accept_length=self.accept_length(scenario) if decode.speculative is not None else None,
            accept_basis=self.accept_basis(scenario),
            role_note=role_note(self.plan),
        )
        p.pages = 0 if self.first_principles else self.calibration.pages(self.family, self.stack)
        p.band_basis = support_text(p.pages)
        apply_band(p, self.calibration, self._shape.band_widening)
        return p

    def _borrowed(self, term: str) -> list[str]:
        return borrowed_from(self.calibration.values, term, self.calibration.lenders)


def architecture_kind(model: Model) -> str:
    """What the calibration can transfer between models: pure MLA, or hybrid with a linear-attention kind."""
    linear = model.architecture.linear_attention
    return f"hybrid-{linear.kind}" if linear is not None else "mla"


def _architecture_unfitted(model: Model, calibration: Calibration) -> bool:
    """No reference the calibration was fitted on is of a model with this architecture (an empty
    calibration, as during a fit, says nothing)."""
    if not calibration.references:
        return False
    catalog = load_catalog()
    fitted = {
        architecture_kind(catalog.models[ref.model])
        for ref_id, ref in catalog.references.items()
        if ref_id in calibration.references and ref.model in catalog.models
    }
    return bool(fitted) and architecture_kind(model) not in fitted


def predict(
    plan: LaunchPlan, scenarios: list[Scenario], calibration: Calibration | None = None, stack: Stack | None = None
) -> list[Prediction]:
    predictor = Predictor(plan, calibration, stack=stack)
    return [predictor.predict(s) for s in scenarios]
