"""Run the ``n`` choices of one request side by side on the engine.

SGLang samples the ``n`` choices of a request in parallel and streams their tokens as they
come; here each choice is one engine job and their tokens are merged in arrival order.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import aclosing

from .engine import Engine, Job, Progress


async def run_merged(engine: Engine, jobs: list[Job]) -> AsyncIterator[tuple[int, int]]:
    """Yield (choice index, token index) for all jobs, as each token is due."""
    if len(jobs) == 1:
        async with aclosing(engine.run(jobs[0], Progress())) as tokens:
            async for token in tokens:
                yield 0, token
        return
    queue: asyncio.Queue[tuple[int, int | None]] = asyncio.Queue()

    async def pump(index: int, job: Job) -> None:
        try:
            async with aclosing(engine.run(job, Progress())) as tokens:
                async for token in tokens:
                    await queue.put((index, token))
        finally:
            queue.put_nowait((index, None))

    tasks = [asyncio.create_task(pump(i, job)) for i, job in enumerate(jobs)]
    finished = 0
    try:
        while finished < len(jobs):
            index, maybe_token = await queue.get()
            if maybe_token is None:
                finished += 1
                continue
            yield index, maybe_token
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def drain_all(engine: Engine, jobs: list[Job]) -> None:
    """Run every job to completion (a whole, non-streamed response)."""
    await asyncio.gather(*(engine.drain(job, Progress()) for job in jobs))
