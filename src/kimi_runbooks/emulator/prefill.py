"""Prefill lanes: prefills queue behind each other, and decode waits while they run.

SGLang's scheduler runs a waiting prefill before any decode step (sgl-project/sglang,
python/sglang/srt/managers/scheduler.py, get_next_batch_to_run: "Run prefill first if
possible"). So on a server that prefills and decodes on the same devices:

* a request's prefill starts when the prefill before it has finished (one lane per DP-attention
  rank and replica, which prefill side by side): concurrent arrivals see their TTFT grow by
  the prefills ahead of them;
* every running request's next token waits for the prefill time that falls between its tokens
  (with several lanes, the time any lane is prefilling: DP-attention ranks step together).

A PD-disaggregated decode pool never stalls for prefill (`stalls_decode=False`). This is the
same behaviour the performance model predicts (perfmodel.queueing), so a rehearsal under load
behaves like the prediction. Times are time.monotonic() seconds, already scaled.
"""

from __future__ import annotations

from collections import deque

HISTORY = 4096  # prefill intervals kept for stall accounting (older ones lie before any window)


class PrefillLanes:
    def __init__(self, lanes: int = 1, stalls_decode: bool = True) -> None:
        self._free_at = [0.0] * max(int(lanes), 1)
        self.stalls_decode = stalls_decode
        self._busy: deque[tuple[float, float]] = deque(maxlen=HISTORY)

    def book(self, ready_at: float, seconds: float) -> float:
        """Reserve the lane that frees first, from `ready_at`, for `seconds`; returns when the
        prefill ends (the request's first token)."""
        lane = min(range(len(self._free_at)), key=self._free_at.__getitem__)
        start = max(ready_at, self._free_at[lane])
        end = start + max(seconds, 0.0)
        self._free_at[lane] = end
        if self.stalls_decode and end > start:
            self._busy.append((start, end))
        return end

    def decode_due(self, since: float, work: float) -> float:
        """When a decode step of `work` seconds, ready at `since`, is done: it runs only in time
        no lane is prefilling (with several lanes: DP-attention ranks step together)."""
        due, left = since, max(work, 0.0)
        if self.stalls_decode:
            for start, end in sorted(span for span in self._busy if span[1] > since):
                if start > due:
                    if start - due >= left:
                        break
                    left -= start - due
                due = max(due, end)
        return due + left
