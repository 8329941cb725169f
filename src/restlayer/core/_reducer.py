"""The pure reducer: `reduce(state, action) -> state`, never modifying `state`.

`apply` also reports a normalization failure of a response, which the reducer
records as an error (status 400, `Error processing <key>`) with the store's
data left as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeVar

from restlayer._pmap import EMPTY, PMap
from restlayer.core import _actions as act
from restlayer.core._patch import merge_patch
from restlayer.core._state import EMPTY_STATE, State
from restlayer.core.endpoint import Endpoint
from restlayer.errors import ProcessingError, SchemaError
from restlayer.schema import normalize

if TYPE_CHECKING:
    from restlayer.core._state import EndpointMeta

log = logging.getLogger("restlayer")
V = TypeVar("V")


def reduce(state: State, action: act.Action) -> State:
    """The state after `action`."""
    return apply(state, action)[0]


def apply(state: State, action: act.Action) -> tuple[State, BaseException | None]:
    """The state after `action`, plus the processing error a response raised (if any)."""
    if isinstance(action, act.SetResponse):
        return _set_response(state, action)
    if isinstance(action, act.Fetch):
        return _fetch(state, action), None
    if isinstance(action, act.Set):
        return _set(state, action), None
    if isinstance(action, act.Invalidate):
        return _invalidate(state, action.keys), None
    if isinstance(action, act.InvalidateAll):
        return _invalidate(state, [k for k in state.endpoints if action.test_key(k)]), None
    if isinstance(action, act.ExpireAll):
        return _expire_all(state, action), None
    if isinstance(action, act.Reset):
        return EMPTY_STATE.evolve(last_reset=action.date), None
    if isinstance(action, act.GC):
        return _gc(state, action), None
    if isinstance(action, act.Merge):
        return merge_patch(state, action.patch), None
    return state, None


def _fetch(state: State, action: act.Fetch) -> State:
    """An optimistic fetch joins the pending entries (applied on every read)."""
    if not action.optimistic:
        return state
    return state.evolve(optimistic=(*state.optimistic, action))


def _without(state: State, fetch: act.Fetch | None) -> tuple[act.Fetch, ...]:
    if fetch is None or fetch not in state.optimistic:
        return state.optimistic
    return tuple(f for f in state.optimistic if f is not fetch)


def _set_response(state: State, action: act.SetResponse) -> tuple[State, BaseException | None]:
    if action.fetch is not None and action.fetched_at < state.last_reset:
        return state, None  # a late reply to a fetch started before the last reset
    optimistic = _without(state, action.fetch)
    if action.aborted:
        return state.evolve(optimistic=optimistic), None
    if action.error:
        error = action.response
        assert isinstance(error, BaseException)  # an error SetResponse carries the exception (set_error checks)
        return _error(state, action, error, action.error_policy, optimistic), None
    try:
        return normalize_response(state, action, optimistic=optimistic), None
    except Exception as exc:  # normalization of untrusted data: any failure is a 400
        where = (exc.schema, exc.path) if isinstance(exc, SchemaError) else ("", ())
        error = ProcessingError(f"Error processing {action.key}: {exc}", schema=where[0], path=where[1])
        error.__cause__ = exc
        if action.fetch is None:  # a direct write (`set_response`): its caller gets the error, the store is left as is
            return state, error
        policy = _policy(action.endpoint, error)
        return _error(state, action, error, policy, optimistic), error


def normalize_response(
    state: State,
    action: act.SetResponse,
    *,
    guess: str | None = None,
    optimistic: tuple[act.Fetch, ...] | None = None,
) -> State:
    """`state` with the response normalized in (entities, endpoints, meta); may raise.

    Only an optimistic guess may give a created item a placeholder pk, drawn from the
    seed `guess` (one per pending fetch, so a recomputed guess keeps its pks); a reply
    (from the server or `set_response`) without a usable pk raises SchemaError.
    `optimistic`: the pending optimistic fetches of the new state (default: `state`'s).
    """
    meta = {"fetched_at": action.fetched_at, "date": action.date, "expires_at": action.expires_at}
    result = normalize(
        action.endpoint.schema,
        action.response,
        action.args,
        state,
        meta,
        placeholders=guess is not None,
        placeholder_seed=guess,
    )
    endpoints, key_metas = state.endpoints, state.meta
    if not _superseded(state, action):
        endpoints = endpoints.set(action.key, result.result)
        key_metas = key_metas.set(action.key, _success_meta(action, key_metas.get(action.key)))
    endpoints = _run_updates(endpoints, action, result.result)
    return state.evolve(
        entities=result.entities,
        indexes=result.indexes,
        entities_meta=result.entities_meta,
        endpoints=endpoints,
        meta=key_metas,
        optimistic=state.optimistic if optimistic is None else optimistic,
    )


def _success_meta(action: act.SetResponse, previous: EndpointMeta | None) -> EndpointMeta:
    """`meta[key]` after storing `action`'s response."""
    return {
        "fetched_at": action.fetched_at,
        "date": action.date,
        "expires_at": action.expires_at,
        "prev_expires_at": None if previous is None else previous.get("expires_at"),
    }


def _superseded(state: State, action: act.SetResponse) -> bool:
    """Whether the reply to a read holds older data than the result stored for its key.

    A read's reply reflects the server when its request started (`fetched_at`); a
    result written meanwhile (`set_response`, a stream, another process) is newer, so
    the reply must not replace it: the later write wins, as it does for the entities
    (ordered by `fetched_at`) and in the shared store. An error recorded since is no
    result (its meta says nothing about the data's age), nor is an invalidated key.
    A mutation's reply is always stored: its caller gets its own result.
    """
    if action.fetch is None or action.endpoint.side_effect or action.key not in state.endpoints:
        return False
    stored = state.meta.get(action.key)
    if stored is None or "error" in stored:
        return False
    return stored.get("fetched_at", 0) > action.fetched_at


def _run_updates(endpoints: PMap[str, object], action: act.SetResponse, result: object) -> PMap[str, object]:
    """Apply the endpoint's `update` option; an exception there is logged and ignored."""
    update = getattr(action.endpoint, "update", None)
    if update is None:
        return endpoints
    try:
        updaters = update(result, *action.args)
        changes = {key: fn(endpoints.get(key)) for key, fn in (updaters or {}).items()}
    except Exception:
        log.exception("update() of %s failed; ignored", getattr(action.endpoint, "name", action.key))
        return endpoints
    return endpoints.update(changes)


def _policy(endpoint: Endpoint[object], error: BaseException) -> str | None:
    policy = getattr(endpoint, "error_policy", None)
    try:
        return None if policy is None else policy(error)
    except Exception:
        log.exception("error_policy of %s failed", getattr(endpoint, "name", endpoint))
        return None


def _error(
    state: State,
    action: act.SetResponse,
    error: BaseException,
    policy: str | None,
    optimistic: tuple[act.Fetch, ...],
) -> State:
    """Record `error` in `meta[key]`; stored data stays (and the optimistic entry rolls back)."""
    key_meta: EndpointMeta = {
        "date": action.date,
        "fetched_at": action.fetched_at,
        "expires_at": action.expires_at,
        "error": error,
        "error_policy": policy,
    }
    return state.evolve(meta=state.meta.set(action.key, key_meta), optimistic=optimistic)


def _set(state: State, action: act.Set) -> State:
    meta = {"fetched_at": action.date, "date": action.date, "expires_at": action.expires_at}
    result = normalize(action.schema, action.value, action.args, state, meta)
    return state.evolve(entities=result.entities, indexes=result.indexes, entities_meta=result.entities_meta)


def _invalidate(state: State, keys: Iterable[str]) -> State:
    endpoints, meta = state.endpoints, state.meta
    changes: dict[str, EndpointMeta] = {}
    for key in keys:
        endpoints = endpoints.delete(key)
        item: EndpointMeta = {**(meta.get(key) or {})}
        item.pop("error", None)
        item["expires_at"] = 0
        item["invalidated"] = True
        changes[key] = item
    if not changes:
        return state
    return state.evolve(endpoints=endpoints, meta=meta.update(changes))


def _expire_all(state: State, action: act.ExpireAll) -> State:
    changes: dict[str, EndpointMeta] = {
        key: {**value, "expires_at": 1} for key, value in state.meta.items() if action.test_key(key)
    }
    if not changes:
        return state
    return state.evolve(meta=state.meta.update(changes))


def _gc(state: State, action: act.GC) -> State:
    endpoints, meta = state.endpoints, state.meta
    for key in action.endpoint_keys:
        endpoints = endpoints.delete(key)
        meta = meta.delete(key)
    entities, entities_meta = state.entities, state.entities_meta
    by_type: dict[str, list[str]] = {}
    for key, pk in action.entity_refs:
        by_type.setdefault(key, []).append(pk)
    for key, pks in by_type.items():
        entities = _drop_rows(entities, key, pks)
        entities_meta = _drop_rows(entities_meta, key, pks)
    return state.evolve(endpoints=endpoints, meta=meta, entities=entities, entities_meta=entities_meta)


def _drop_rows(tables: PMap[str, PMap[str, V]], key: str, pks: list[str]) -> PMap[str, PMap[str, V]]:
    table = tables.get(key)
    if table is None:
        return tables
    for pk in pks:
        table = table.delete(pk)
    return tables.set(key, table) if len(table) else tables.delete(key)


__all__ = ["EMPTY", "ProcessingError", "apply", "normalize_response", "reduce"]
