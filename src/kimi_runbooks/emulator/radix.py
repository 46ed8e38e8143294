"""The prefix cache: a radix tree of token ids, as SGLang 0.5.23's RadixCache keeps one.

What follows SGLang (sgl-project/sglang, python/sglang/srt/mem_cache/radix_cache.py and
managers/schedule_batch.py, 0.5.23):

* matching is by token id, rounded down to whole pages (``--page-size``; 1 unless an attention
  backend forces 64: ``RadixKey.page_aligned`` / ``match``), and at most ``input_len - 1`` tokens
  of a prompt match (``Req._compute_max_prefix_len``: the last token is always computed, for
  its logits);
* a request's prompt goes into the tree when its prefill is done, and prompt + output when it
  finishes (``cache_unfinished_req`` / ``release_kv_cache`` -> ``checkpoint``); so two requests
  prefilled at the same moment both miss, as in one SGLang prefill batch;
* the nodes a running request uses are locked (``inc_lock_ref``); only unlocked leaves are
  evicted, least recently used first (the default ``--radix-eviction-policy lru``), when the KV
  pool needs room (``evict``);
* ``--disable-radix-cache`` keeps nothing and matches nothing.

The emulator has no KV memory: the tree holds token ids only, and its size counts against the
emulated pool (scheduler.py), as SGLang's tree holds pool slots.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

_CHUNK = 512  # ids compared per slice before the exact position of a mismatch is searched
_clock = itertools.count()


@dataclass(eq=False)
class Node:
    key: list[int] = field(default_factory=list)
    parent: Node | None = None
    children: dict[tuple[int, ...], Node] = field(default_factory=dict)
    lock_ref: int = 0
    last_access: int = 0

    def mark_used(self) -> None:
        self.last_access = next(_clock)


def _common(a: Sequence[int], a_at: int, b: Sequence[int], b_at: int, limit: int) -> int:
    """Length of the common run of a[a_at:] and b[b_at:], at most `limit`."""
    n = 0
    while n < limit:
        step = min(_CHUNK, limit - n)
        if a[a_at + n : a_at + n + step] == b[b_at + n : b_at + n + step]:
            n += step
            continue
        while n < limit and a[a_at + n] == b[b_at + n]:
            n += 1
        return n
    return n


class PrefixCache:
    """Token-id radix tree with page granularity, lock counts and LRU eviction."""

    def __init__(self, page_size: int = 1, disabled: bool = False) -> None:
        self.page_size = max(int(page_size), 1)
        self.disabled = disabled
        self.reset()

    def reset(self) -> None:
        """Drop everything (/flush_cache)."""
        self.root = Node(lock_ref=1)
        self.held = 0  # tokens in the tree
        self.protected = 0  # tokens on some running request's path

    # ---------------------------------------------------------------- lookups
    def _child_key(self, ids: Sequence[int], at: int) -> tuple[int, ...]:
        return tuple(ids[at : at + self.page_size])

    def _aligned(self, n: int) -> int:
        return n // self.page_size * self.page_size

    def match(self, ids: Sequence[int]) -> tuple[int, Node]:
        """Longest cached prefix of `ids` (page-aligned) and the node it ends on; refreshes the
        path's access time. A match ending inside a node splits it, as SGLang's does."""
        if self.disabled:
            return 0, self.root
        limit = self._aligned(len(ids))
        node, at = self.root, 0
        node.mark_used()
        while at < limit:
            child = node.children.get(self._child_key(ids, at))
            if child is None:
                break
            child.mark_used()
            common = self._aligned(_common(child.key, 0, ids, at, min(len(child.key), limit - at)))
            if common < len(child.key):
                if common:
                    node = self._split(child, common)
                    at += common
                break
            node, at = child, at + common
        return at, node

    def _split(self, child: Node, at: int) -> Node:
        """Cut `child`'s key at `at`: a new parent holds the head, `child` keeps the tail."""
        parent = child.parent
        assert parent is not None
        head = Node(key=child.key[:at], parent=parent, lock_ref=child.lock_ref, last_access=child.last_access)
        parent.children[self._child_key(child.key, 0)] = head
        child.key = child.key[at:]
        child.parent = head
        head.children[self._child_key(child.key, 0)] = child
        return head

    # ---------------------------------------------------------------- updates
    def insert(self, ids: Sequence[int]) -> tuple[int, Node]:
        """Add `ids` (page-aligned); returns (tokens newly added, the node the sequence ends on)."""
        if self.disabled:
            return 0, self.root
        ids = list(ids[: self._aligned(len(ids))])
        matched, node = self.match(ids)
        if matched == len(ids):
            return 0, node
        leaf = Node(key=ids[matched:], parent=node)
        leaf.mark_used()
        node.children[self._child_key(leaf.key, 0)] = leaf
        self.held += len(leaf.key)
        return len(leaf.key), leaf

    def lock(self, node: Node) -> None:
        while node is not self.root and node is not None:
            if node.lock_ref == 0:
                self.protected += len(node.key)
            node.lock_ref += 1
            node = node.parent  # type: ignore[assignment]

    def unlock(self, node: Node) -> None:
        while node is not self.root and node is not None:
            node.lock_ref -= 1
            if node.lock_ref == 0:
                self.protected -= len(node.key)
            node = node.parent  # type: ignore[assignment]

    @property
    def evictable(self) -> int:
        return self.held - self.protected

    def evict(self, tokens: int) -> int:
        """Free at least `tokens` (when the tree has them unlocked), least recently used leaves first."""
        if self.disabled or tokens <= 0:
            return 0
        heap = [(n.last_access, id(n), n) for n in self._leaves() if n.lock_ref == 0]
        heapq.heapify(heap)
        freed = 0
        while freed < tokens and heap:
            _, _, leaf = heapq.heappop(heap)
            parent = leaf.parent
            assert parent is not None
            del parent.children[self._child_key(leaf.key, 0)]
            freed += len(leaf.key)
            self.held -= len(leaf.key)
            if parent is not self.root and not parent.children and parent.lock_ref == 0:
                heapq.heappush(heap, (parent.last_access, id(parent), parent))
        return freed

    def _leaves(self) -> list[Node]:
        out, stack = [], [self.root]
        while stack:
            node = stack.pop()
            if node.children:
                stack.extend(node.children.values())
            elif node is not self.root:
                out.append(node)
        return out
