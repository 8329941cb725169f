"""Time options: milliseconds as a number, or a `datetime.timedelta`."""

from __future__ import annotations

import logging
import math
from datetime import timedelta

from restlayer.errors import ParamError

#: Endpoint options that are lengths of time, in milliseconds.
TIME_OPTIONS = ("data_expiry_length", "error_expiry_length", "poll_frequency")

#: Polling faster than this is almost always a unit mistake (seconds given as ms).
MIN_SENSIBLE_POLL_MS = 100

_log = logging.getLogger("restlayer")
#: The too-fast poll frequencies warned about already: one mistake (`resource(poll_frequency=50)`
#: defines five endpoints, each `extend` one more) is told once, not once per endpoint.
_warned_polls: set[float] = set()


def to_ms(value: object, name: str) -> float | None:
    """`value` in ms: a number as is, a timedelta converted, None kept; anything else is a ParamError."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        return value.total_seconds() * 1000
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise ParamError(f"{name} must be milliseconds (a number) or a datetime.timedelta, not {value!r}")


def length_ms(value: object, name: str, *, zero_ok: bool) -> float:
    """A constructor's length of time (`GCPolicy(interval_ms=...)`, `keep_ms`, `lock_ms`) in ms, checked.

    A number of milliseconds or a `datetime.timedelta`, as the endpoints' time options take; anything
    else, NaN, infinity, a negative length (or zero where `zero_ok` is false) is a ParamError here,
    rather than a TypeError from the arithmetic that uses it later, far from the mistake.
    """
    ms = to_ms(value, name)
    if ms is None or not (0 <= ms < math.inf) or (ms == 0 and not zero_ok):
        bound = ">= 0" if zero_ok else "> 0"
        what = f"a finite number of milliseconds {bound} or a datetime.timedelta"
        raise ParamError(f"{name} must be {what}, not {value!r}")
    return ms


def _check_range(endpoint: str, name: str, ms: float) -> None:
    """Refuse a NaN or negative length, and a poll_frequency that is not positive and finite."""
    if name == "poll_frequency":
        if not (0 < ms < math.inf):
            raise ParamError(
                f"{endpoint}: poll_frequency must be a positive, finite number of milliseconds "
                f"(or None for no polling), not {ms!r}"
            )
    elif not ms >= 0:  # NaN fails every comparison
        raise ParamError(f"{endpoint}: {name} must be >= 0 milliseconds (or None for the default), not {ms!r}")


def normalize_time_options(endpoint: object) -> None:
    """Turn an endpoint's time options into ms in place, refusing NaN and out-of-range values;
    warn about a poll_frequency that looks like seconds."""
    label = str(getattr(endpoint, "name", endpoint))
    for name in TIME_OPTIONS:
        value = getattr(endpoint, name, None)
        if value is not None and type(value) not in (int, float):
            value = to_ms(value, name)
            setattr(endpoint, name, value)
        if value is not None:
            _check_range(label, name, value)
    frequency = getattr(endpoint, "poll_frequency", None)
    if frequency is not None and frequency < MIN_SENSIBLE_POLL_MS and frequency not in _warned_polls:
        _warned_polls.add(frequency)
        _log.warning(
            "%s: poll_frequency=%s is in milliseconds, so this polls %d times a second; "
            "use e.g. timedelta(seconds=%s) for seconds",
            getattr(endpoint, "name", endpoint),
            frequency,
            round(1000 / frequency) if frequency > 0 else 0,
            frequency,
        )
