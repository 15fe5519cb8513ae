"""Give freed memory back to the system in a long-running server (glibc only; elsewhere a no-op).

A server that runs each request in one of many worker threads makes glibc's allocator open
an arena per thread (up to eight per core), and the megabytes an audit frees stay in those
arenas: the process's resident memory climbs with the number of threads that ever worked
and does not come down. Two arenas are enough for two heavy requests at a time, and
``malloc_trim`` after each request returns the free pages at the top of each heap.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

M_ARENA_MAX = -8  # glibc's mallopt parameter


@functools.lru_cache(maxsize=1)
def _libc():
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.malloc_trim, libc.mallopt  # noqa: B018 — glibc has both; musl and others do not
    except (OSError, AttributeError):
        return None
    return libc


def limit_arenas(count: int) -> bool:
    """At most ``count`` malloc arenas from now on (call before worker threads start). True
    where the allocator took the setting."""
    libc = _libc()
    return bool(libc is not None and libc.mallopt(M_ARENA_MAX, int(count)))


def give_back() -> bool:
    """Return free heap pages to the system; True where some were released."""
    libc = _libc()
    return bool(libc is not None and libc.malloc_trim(0))
