"""JSON encoding of what a backend stores: rows and endpoint records (never pickle: a shared store runs no code)."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable
from typing import NamedTuple

from restlayer.core import Snapshot
from restlayer.core._patch import EntityRow, Meta, entity_row, meta_of

log = logging.getLogger("restlayer.shared")
MAX_TTL_MS = 7 * 24 * 3600 * 1000


class EndpointRecord(NamedTuple):
    """A parsed endpoint record: the response as fetched, its meta, the entities it references."""

    response: object
    meta: Meta
    deps: list[tuple[str, str]]
    result: object = None


def dumps(value: object) -> str:
    """Compact JSON; TypeError/ValueError for values JSON cannot hold."""
    return json.dumps(value, separators=(",", ":"), allow_nan=True)


def lifetime_ms(meta: Meta, now: float, keep_ms: float) -> int:
    """How long a stored row lives: until it expires plus `keep_ms` (stale data is still served)."""
    expires = meta["expires_at"]
    if math.isinf(expires):
        return MAX_TTL_MS
    return int(max(1.0, min(expires - now + keep_ms, MAX_TTL_MS)))


def endpoint_record(response: object, result: object, meta: Meta, deps: Iterable[tuple[str, str]]) -> str:
    """The stored form of one endpoint's response (what read-through serves) and normalized result."""
    return dumps({"response": response, "result": result, "meta": meta, "deps": [list(ref) for ref in deps]})


def _json(text: object) -> object:
    """The JSON value of stored `text`; ValueError (malformed) for a value that is no text at all.

    A file written by another tool (columns without types) may hold a number where a row's text
    belongs; `json.loads` would raise TypeError and break opening the whole store for one row.
    """
    if not isinstance(text, (str, bytes, bytearray)):
        raise ValueError(f"stored as {type(text).__name__}, not JSON text")
    return json.loads(text)


def parse_endpoint(text: object, key: str) -> EndpointRecord | None:
    """(response, meta, deps) of a stored endpoint record, or None (logged) when malformed."""
    try:
        data = _json(text)
        if not isinstance(data, dict) or "response" not in data:
            raise ValueError("not an endpoint record")
        deps = data.get("deps", [])
        if not isinstance(deps, list) or not all(
            isinstance(d, list) and len(d) == 2 and all(isinstance(p, str) for p in d) for d in deps
        ):
            raise ValueError("deps must be [key, pk] pairs")
        meta = meta_of(data.get("meta"))
        return EndpointRecord(data["response"], meta, [(d[0], d[1]) for d in deps], data.get("result"))
    except (ValueError, RecursionError) as exc:  # RecursionError: JSON nested deeper than Python parses
        log.warning("ignored a malformed stored value for %s: %s", key, exc)
        return None


def parse_entity(text: object) -> EntityRow | None:
    """A stored entity row, or None (logged) when malformed."""
    try:
        return entity_row(_json(text))
    except (ValueError, RecursionError) as exc:  # RecursionError: JSON nested deeper than Python parses
        log.warning("ignored a malformed stored entity row: %s", exc)
        return None


def snapshot(parsed: EndpointRecord, rows: list[EntityRow], expired: bool) -> Snapshot:
    """What a backend read returns: the record's response and meta with the current `rows` of its entities."""
    return Snapshot(parsed.response, parsed.meta, tuple(rows), expired)
