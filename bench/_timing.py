"""Shared timing helper for the benchmarks: best-of-N ops/s, cases interleaved in one run."""

from __future__ import annotations

import time
from collections.abc import Callable


def ops_per_sec(fn: Callable[[], object], *, min_time: float = 0.2, repeat: int = 5) -> float:
    """Best ops/s of `repeat` rounds, each running `fn` for at least `min_time` seconds."""
    best = 0.0
    number = 1
    while True:  # calibrate so one round lasts about min_time
        start = time.perf_counter()
        for _ in range(number):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time / 4:
            break
        number *= 2
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        elapsed = time.perf_counter() - start
        best = max(best, number / elapsed)
    return best


def row(name: str, rate: float, note: str = "") -> None:
    print(f"  {name:<58} {rate:>12,.1f} ops/s  {note}")
