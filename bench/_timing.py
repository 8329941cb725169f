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


def median_ops(
    fn: Callable[[], object], *, min_time: float = 0.5, warm_time: float = 0.2
) -> tuple[float, float, float]:
    """(median, min, max) ops/s over at least 5 timed batches of >= 50 ms, after a warm-up.

    The same procedure as the side-by-side harness against the JavaScript original.
    """
    clock = time.perf_counter
    start = clock()
    while clock() - start < warm_time:
        fn()
    number = 1
    while True:
        start = clock()
        for _ in range(number):
            fn()
        if clock() - start >= 0.05:
            break
        number *= 2
    rates: list[float] = []
    begin = clock()
    while len(rates) < 5 or clock() - begin < min_time:
        start = clock()
        for _ in range(number):
            fn()
        rates.append(number / (clock() - start))
    rates.sort()
    mid = len(rates) // 2
    median = rates[mid] if len(rates) % 2 else (rates[mid - 1] + rates[mid]) / 2
    return median, rates[0], rates[-1]
