"""Admission control against KV capacity and the running-request limit.

A request reserves ``tokens`` (input + max_new_tokens) of ``capacity`` while it runs.
Requests that would overflow the pool, or exceed ``max_running``, wait in a FIFO
queue until earlier requests release their reservation: that queue wait is what
makes TTFT climb when a runbook overloads a server.  A request larger than the whole
pool is admitted alone rather than never (a real server would retract or reject it;
context-length validation happens before it gets here).

Tokens the prefix cache holds (radix.py) share the pool: a request that does not fit first
evicts unlocked cached tokens, least recently used first, as SGLang evicts its radix tree when
an allocation needs room (mem_cache/radix_cache.py ``evict``). A request reserves only the
prompt tokens the cache did not hold; once its prompt is in the tree, ``shrink`` moves those
tokens from its reservation to the tree.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(eq=False)
class Ticket:
    """A reservation; hand it back with Scheduler.release."""

    tokens: int
    admitted: bool = False
    waited: bool = False
    future: asyncio.Future[None] | None = field(default=None, repr=False)


class SharedPool(Protocol):
    """What the scheduler needs of the prefix cache: the tokens it holds, and room on demand."""

    held: int
    protected: int  # held on the path of a running or waiting request: not evictable

    def evict(self, tokens: int) -> int: ...


class Scheduler:
    """FIFO admission; counts for /metrics and the ITL model."""

    def __init__(self, capacity: int, max_running: int) -> None:
        self.capacity = max(int(capacity), 1)
        self.max_running = max(int(max_running), 1)
        self.running = 0
        self.used_tokens = 0
        self._queue: deque[Ticket] = deque()
        self.cache: SharedPool | None = None

    @property
    def queued(self) -> int:
        return len(self._queue)

    @property
    def pool_used(self) -> int:
        """Pool tokens in use: running reservations plus cached tokens a request has locked (SGLang
        counts evictable cached tokens as available: sglang:num_used_tokens)."""
        return self.used_tokens + (self.cache.protected if self.cache is not None else 0)

    @property
    def token_usage(self) -> float:
        """Fraction of the KV pool in use (sglang:token_usage)."""
        return min(self.pool_used / self.capacity, 1.0)

    async def admit(self, tokens: int) -> Ticket:
        """Wait (FIFO) until the request fits, then reserve its tokens."""
        ticket = Ticket(tokens=min(max(int(tokens), 0), self.capacity))
        if not self._queue and self._fits(ticket):
            self._start(ticket)
            return ticket
        ticket.waited = True
        ticket.future = asyncio.get_running_loop().create_future()
        self._queue.append(ticket)
        try:
            await ticket.future
        except BaseException:
            self._abandon(ticket)
            raise
        return ticket

    def release(self, ticket: Ticket) -> None:
        """Give back a reservation (idempotent) and admit whoever now fits."""
        if ticket.admitted:
            ticket.admitted = False
            self.running -= 1
            self.used_tokens -= ticket.tokens
        self._admit_waiting()

    def shrink(self, ticket: Ticket, tokens: int) -> None:
        """Part of a running reservation (`tokens`) is now held by the prefix cache instead."""
        tokens = min(max(int(tokens), 0), ticket.tokens)
        if ticket.admitted and tokens:
            ticket.tokens -= tokens
            self.used_tokens -= tokens

    def _fits(self, ticket: Ticket) -> bool:
        if self.running >= self.max_running:
            return False
        cached = self.cache.held if self.cache is not None else 0
        short = self.used_tokens + cached + ticket.tokens - self.capacity
        if short > 0 and self.cache is not None:
            self.cache.evict(short)
            short = self.used_tokens + self.cache.held + ticket.tokens - self.capacity
        return self.running == 0 or short <= 0

    def _start(self, ticket: Ticket) -> None:
        ticket.admitted = True
        self.running += 1
        self.used_tokens += ticket.tokens

    def _admit_waiting(self) -> None:
        while self._queue and self._fits(self._queue[0]):
            ticket = self._queue.popleft()
            if ticket.future is not None and ticket.future.done():
                continue  # cancelled while queued
            self._start(ticket)
            if ticket.future is not None:
                ticket.future.set_result(None)

    def _abandon(self, ticket: Ticket) -> None:
        """A waiter was cancelled (client went away): drop it or undo its admission."""
        if ticket in self._queue:
            self._queue.remove(ticket)
        self.release(ticket)
