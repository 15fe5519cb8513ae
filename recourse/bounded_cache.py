"""A cache in memory that keeps only the entries used most recently, safe to share between the
app's concurrent requests. ``functools.lru_cache`` does not fit where the key is made from a
tensor's bytes or a batch is looked up at once: the caller makes the key, looks up, computes
what is missing, and stores it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

Value = TypeVar("Value")


class BoundedCache(Generic[Value]):
    """At most ``size`` entries, the least recently used dropped first; one lock for every
    reader and writer (two callers that miss the same key at once may both compute it)."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        self.size = size
        self.stored = 0  # entries stored so far: the computations it did not save
        self._entries: OrderedDict[Hashable, Value] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Value | None:
        """The entry of ``key`` (now the most recently used), or None."""
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Value) -> None:
        with self._lock:
            self.stored += 1
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
