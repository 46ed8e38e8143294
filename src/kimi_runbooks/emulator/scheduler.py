"""Admission control against KV capacity and the running-request limit.

A request reserves ``tokens`` (input + max_new_tokens) of ``capacity`` while it runs.
Requests that would overflow the pool, or exceed ``max_running``, wait in a FIFO
queue until earlier requests release their reservation: that queue wait is what
makes TTFT climb when a runbook overloads a server.  A request larger than the whole
pool is admitted alone rather than never (a real server would retract or reject it;
context-length validation happens before it gets here).
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field


@dataclass(eq=False)
class Ticket:
    """A reservation; hand it back with Scheduler.release."""

    tokens: int
    admitted: bool = False
    waited: bool = False
    future: asyncio.Future[None] | None = field(default=None, repr=False)


class Scheduler:
    """FIFO admission; counts for /metrics and the ITL model."""

    def __init__(self, capacity: int, max_running: int) -> None:
        self.capacity = max(int(capacity), 1)
        self.max_running = max(int(max_running), 1)
        self.running = 0
        self.used_tokens = 0
        self._queue: deque[Ticket] = deque()

    @property
    def queued(self) -> int:
        return len(self._queue)

    @property
    def token_usage(self) -> float:
        """Fraction of the KV pool reserved by running requests (sglang:token_usage)."""
        return min(self.used_tokens / self.capacity, 1.0)

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

    def _fits(self, ticket: Ticket) -> bool:
        if self.running >= self.max_running:
            return False
        return self.running == 0 or self.used_tokens + ticket.tokens <= self.capacity

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
