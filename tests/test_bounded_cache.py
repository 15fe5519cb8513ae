"""The in-memory cache the edits share (recourse/bounded_cache.py): bounded, least recently used out first."""

import threading

import pytest

from recourse.bounded_cache import BoundedCache


def test_the_least_recently_used_entry_goes_first():
    cache = BoundedCache(size=2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # now "b" is the least recently used
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)
    assert len(cache) == 2 and cache.stored == 3
    cache.clear()
    assert len(cache) == 0 and cache.get("a") is None


def test_concurrent_writers_keep_it_bounded():
    cache = BoundedCache(size=8)
    threads = [threading.Thread(target=lambda k=k: [cache.put((k, i), i) for i in range(200)]) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 8 and cache.stored == 800


def test_a_cache_holds_at_least_one_entry():
    with pytest.raises(ValueError, match="at least 1"):
        BoundedCache(size=0)
