"""Time options: milliseconds as a number, or a `datetime.timedelta`."""

from __future__ import annotations

import logging
from datetime import timedelta

from restlayer.errors import ParamError

#: Endpoint options that are lengths of time, in milliseconds.
TIME_OPTIONS = ("data_expiry_length", "error_expiry_length", "poll_frequency")

#: Polling faster than this is almost always a unit mistake (seconds given as ms).
MIN_SENSIBLE_POLL_MS = 100

_log = logging.getLogger("restlayer")


def to_ms(value: object, name: str) -> float | None:
    """`value` in ms: a number as is, a timedelta converted, None kept; anything else is a ParamError."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        return value.total_seconds() * 1000
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise ParamError(f"{name} must be milliseconds (a number) or a datetime.timedelta, not {value!r}")


def normalize_time_options(endpoint: object) -> None:
    """Turn an endpoint's time options into ms in place; warn about a poll_frequency that looks like seconds."""
    for name in TIME_OPTIONS:
        value = getattr(endpoint, name, None)
        if value is not None and type(value) not in (int, float):
            setattr(endpoint, name, to_ms(value, name))
    frequency = getattr(endpoint, "poll_frequency", None)
    if frequency is not None and frequency < MIN_SENSIBLE_POLL_MS:
        _log.warning(
            "%s: poll_frequency=%s is in milliseconds, so this polls %d times a second; "
            "use e.g. timedelta(seconds=%s) for seconds",
            getattr(endpoint, "name", endpoint),
            frequency,
            round(1000 / frequency) if frequency > 0 else 0,
            frequency,
        )
