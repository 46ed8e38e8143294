"""Paces tokens in time: queueing, prefill, then one token per inter-token interval.

Handlers decide *what* a request answers (content.py); the engine decides *when* each
token goes out.  Token times follow a deadline schedule on the monotonic clock
(deadline[i+1] = deadline[i] + ITL), so sleeping late once does not push every later
token back; that keeps measured ITL equal to the configured one on average, and
clock.py wakes each token with sub-millisecond precision so the median matches too.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass

from .clock import sleep_until
from .faults import FaultInjector
from .prefill import PrefillLanes
from .prometheus import Metrics
from .radix import Node, PrefixCache
from .scheduler import Scheduler, Ticket
from .settings import EmulatorSettings


@dataclass
class Job:
    """What the engine needs to know about one request."""

    prompt_tokens: int
    output_tokens: int  # tokens that will actually be emitted
    reserve_tokens: int  # prompt + max_new_tokens, held in the KV pool while running
    arrival: float  # time.monotonic() when the request arrived
    streaming: bool = False
    prompt_ids: list[int] | None = None  # the prompt's token ids: the prefix-cache key (radix.py)
    output_ids: list[int] | None = None  # the ids it generates, cached with the prompt when it finishes
    cached_tokens: int = 0  # set by the engine: prompt tokens the prefix cache held (skipped prefill)
    room: int | None = None  # PD: the bootstrap room the router gave the request (disagg.py)
    kv_transferred: bool = False  # PD decode: the prompt's KV came from the prefill server, no prefill here
    fast_forward: float = 1.0  # this request's emulated time runs this many times faster (fast_forward.py)

    @classmethod
    def reserving(
        cls,
        prompt_tokens: int,
        output_tokens: int,
        limit: int | None,
        arrival: float,
        streaming: bool,
        prompt_ids: list[int] | None = None,
        output_ids: list[int] | None = None,
    ) -> Job:
        """A job that holds prompt + ``limit`` tokens of KV while it runs (its own output when no limit
        was asked), as SGLang's scheduler reserves max_new_tokens for a running request."""
        reserve = prompt_tokens + (limit if limit is not None else output_tokens)
        return cls(prompt_tokens, output_tokens, reserve, arrival, streaming, prompt_ids, output_ids)


@dataclass
class Progress:
    """Timing facts collected while a job runs (for meta_info and metrics)."""

    first_token_at: float | None = None
    finished_at: float | None = None
    queue_seconds: float = 0.0
    emitted: int = 0


class Engine:
    """Shared by all handlers of one app: scheduler, metrics and runtime faults."""

    def __init__(self, settings: EmulatorSettings) -> None:
        self.settings = settings
        self.profile = settings.profile
        self.scheduler = Scheduler(settings.profile.max_total_num_tokens, settings.profile.max_running_requests)
        self.metrics = Metrics(
            model_name=settings.served_model_name,
            marked=settings.marked,
            spec_accept_length=settings.profile.spec_accept_length,
        )
        self.metrics.decode.staleness_s *= settings.time_scale  # SGLang's 30 s, in the emulator's time
        self.faults = FaultInjector(settings)
        self.prefill = PrefillLanes(settings.profile.prefill_lanes, settings.profile.prefill_stalls_decode)
        self.kv_tokens = 0  # context the running requests hold (prompt + tokens emitted): the ITL lookup reads it
        self.cache = PrefixCache(settings.page_size, disabled=settings.disable_radix_cache)
        self.scheduler.cache = self.cache  # cached tokens hold KV pool slots; evicted when it needs room
        self.on_prefilled: Callable[[int | None], None] = lambda room: None  # PD prefill: the KV is sent

    def _scaled(self, ms: float, job: Job) -> float:
        return ms / 1000.0 * self.settings.time_scale / job.fast_forward

    async def run(self, job: Job, progress: Progress) -> AsyncGenerator[int, None]:
        """Yield token indices 0..output_tokens-1, each at the moment it is due."""
        crash_at = self.faults.crash_point(job.output_tokens) if job.streaming else None
        node = self._match(job)
        ticket = None
        completed = False
        held = 0
        try:
            ticket = await self.scheduler.admit(job.reserve_tokens - job.cached_tokens)
            admitted_at = time.monotonic()
            start = admitted_at if ticket.waited else job.arrival
            progress.queue_seconds = max(admitted_at - job.arrival, 0.0) if ticket.waited else 0.0
            self.metrics.count_prompt(job.prompt_tokens, job.streaming)
            self.metrics.observe_prefill(job.prompt_tokens - job.cached_tokens, job.cached_tokens)
            self.kv_tokens += job.prompt_tokens
            held += job.prompt_tokens
            prefill = 0.0 if job.kv_transferred else self.profile.prefill_ms(job.prompt_tokens, job.cached_tokens)
            prefill_s = self._scaled(prefill, job)
            deadline = self.prefill.book(start, prefill_s)
            previous = None
            for index in range(job.output_tokens):
                if index == 0:
                    await sleep_until(deadline)
                    self.metrics.lag.observe(deadline, time.monotonic(), prefill_s)
                    node = self._cache_prompt(job, node, ticket)
                    self.on_prefilled(job.room)
                else:
                    itl = self.profile.itl_ms(self.scheduler.running, self.kv_tokens)
                    step_s = self._scaled(itl, job)
                    deadline = await self._decode_turn(deadline, step_s)
                    self.metrics.lag.observe(deadline, time.monotonic(), step_s)
                if crash_at is not None and index == crash_at:
                    self.faults.crash_now()
                now = time.monotonic()
                self._observe_token(job, progress, previous, now)
                previous = now
                self.kv_tokens += 1
                held += 1
                yield index
            if job.output_tokens == 0:
                await sleep_until(deadline)
                node = self._cache_prompt(job, node, ticket)
                self.on_prefilled(job.room)
            if crash_at is not None:
                self.faults.crash_now()  # stream shorter than the crash point: die at its end
            completed = True
        finally:
            self.kv_tokens -= held
            self.cache.unlock(node)
            if ticket is not None:
                if held and job.prompt_ids:  # prefilled: the tree keeps prompt + what was generated
                    self.cache.insert(job.prompt_ids + (job.output_ids or [])[: progress.emitted])
                self.scheduler.release(ticket)
            self._finish(job, progress, completed)

    def _match(self, job: Job) -> Node:
        """Look the prompt up in the prefix cache (at most input_len - 1 tokens match) and lock the
        matched path while the request waits and runs."""
        matched, node = self.cache.match((job.prompt_ids or [])[:-1])
        job.cached_tokens = min(matched, max(job.prompt_tokens - 1, 0))
        self.cache.lock(node)
        return node

    def _cache_prompt(self, job: Job, node: Node, ticket: Ticket) -> Node:
        """Prefill done: the prompt goes into the tree (its new tokens now held there, not by the
        request's reservation) and the request locks its whole prompt path."""
        if not job.prompt_ids:
            return node
        added, prompt_node = self.cache.insert(job.prompt_ids)
        self.scheduler.shrink(ticket, added)
        self.cache.lock(prompt_node)
        self.cache.unlock(node)
        return prompt_node

    async def _decode_turn(self, since: float, work: float) -> float:
        """Sleep until this request's next decode step, `work` seconds of decoding after its
        previous token was due (`since`), is done; prefills booked meanwhile push it back."""
        due = self.prefill.decode_due(since, work)
        while True:
            await sleep_until(due)
            later = self.prefill.decode_due(since, work)
            if later <= due + 1e-6:
                return due
            due = later

    def _observe_token(self, job: Job, progress: Progress, previous: float | None, now: float) -> None:
        if previous is None:
            progress.first_token_at = now
            self.metrics.observe_ttft(now - job.arrival, job.streaming)
        else:
            self.metrics.itl.observe(now - previous)
        progress.emitted += 1
        self.metrics.count_token(job.streaming, None if previous is None else self.scheduler.running)

    def _finish(self, job: Job, progress: Progress, completed: bool) -> None:
        progress.finished_at = time.monotonic()
        if not completed:
            self.metrics.aborted_requests_total += 1
            return
        self.metrics.finish(progress.finished_at - job.arrival, job.streaming, job.cached_tokens)

    async def drain(self, job: Job, progress: Progress) -> None:
        """Run a job to completion without streaming (non-streamed requests)."""
        async for _ in self.run(job, progress):
            pass
