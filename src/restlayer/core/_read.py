"""Reading an endpoint's result from a state: data, expiry status, expiry time, error."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Final

from restlayer._pmap import EMPTY
from restlayer._typing import T
from restlayer.core._state import State
from restlayer.core.endpoint import Endpoint
from restlayer.core.expiry import ExpiryStatus, Response
from restlayer.errors import ParamError
from restlayer.schema import Denormalized, Entity, MemoCache, denormalize
from restlayer.schema._base import Node, compile_schema

if TYPE_CHECKING:
    from restlayer.schema._denormalize import Dep

MISSING: Final = object()
INF = float("inf")
_ENTITY_QUERY = getattr(Entity.query_key, "__func__", None)
Refs = list[tuple[str, str]]


def has_entities(schema: object) -> bool:
    """Whether results of `schema` reference entities (and so need denormalizing)."""
    return _node_has_entities(compile_schema(schema))


def deletes(schema: object) -> bool:
    """Whether `schema` marks entities deleted (holds an `Invalidate`, at the top or in a container)."""
    return _node_deletes(compile_schema(schema))


# Each schema type answers for itself (`Schema.has_entities`, `Schema.deletes_entities`).
def _has_entities(node: Node | None) -> bool:
    return node is not None and node.has_entities()


def _deletes(node: Node | None) -> bool:
    return node is not None and node.deletes_entities()


# Answers per compiled schema node, bounded (the nodes of a program are few; inline schemas come and go).
# Typed by what the cache accepts: checkers do not see an Entity class as hashable (its `__hash__`
# is the instances'), though every node is.
_node_has_entities: Callable[[object], bool] = functools.lru_cache(maxsize=4096)(_has_entities)
_node_deletes: Callable[[object], bool] = functools.lru_cache(maxsize=4096)(_deletes)


def expiry_status(invalid: bool, invalid_if_stale: bool, meta: Mapping[str, object] | None) -> ExpiryStatus:
    """INVALID when invalidated or invalid without an error; IIS when invalid with one or stale-is-invalid."""
    has_error = meta is not None and meta.get("error") is not None
    if (meta is not None and meta.get("invalidated")) or (invalid and not has_error):
        return ExpiryStatus.INVALID
    if invalid or invalid_if_stale:
        return ExpiryStatus.INVALIDATE_IF_STALE
    return ExpiryStatus.VALID


def read_response(
    memo: MemoCache, endpoint: Endpoint[T], args: tuple[object, ...], state: State
) -> tuple[Response[T], Denormalized | None]:
    """The endpoint's Response for `args` from `state`, plus the read's detail (see `refs_of`)."""
    key = endpoint.key(*args)
    meta = state.meta.get(key)
    expires_at = None if meta is None else meta.get("expires_at")
    cached = state.endpoints.get(key, MISSING)
    node = compile_schema(endpoint.schema)
    stale_invalid = bool(getattr(endpoint, "invalid_if_stale", False))
    if node is None or not has_entities(node):
        # the stored result of the endpoint's key is its data: what the endpoint returns. Checked
        # first: a schema naming no entity has nothing in the store to answer a query from the args
        data: T | None = None if cached is MISSING else cached  # type: ignore[assignment]
        status = expiry_status(cached is MISSING, stale_invalid, meta)
        return Response(data, status, expires_at or 0), None
    if cached is MISSING:
        detail = memo.query_detail(node, args, state)
        not_found = not detail.found
    else:
        detail = memo.denormalize_detail(node, cached, state.entities, args)
        not_found = False
    if not expires_at:
        expires_at = 1 if not_found else entity_expiry(detail.deps, state)
    status = expiry_status(detail.invalid, stale_invalid or not_found, meta)
    return Response(detail.data, status, expires_at), detail


def same_data(
    endpoint: Endpoint[object], args: tuple[object, ...], state: State, detail: Denormalized | None
) -> Callable[[State], bool]:
    """A cheap test: would reading `endpoint(*args)` from a later state give the data `state` gave?

    False means "read again" (never a missed change): the stored result must be the
    same object, and so must every record the read touched, or, for a store query
    whose reads are not all tracked, the whole entity and index tables.
    """
    key = endpoint.key(*args)
    cached = state.endpoints.get(key, MISSING)
    if detail is None:  # no entities: the stored result is the data
        return lambda now: now.endpoints.get(key, MISSING) is cached
    if cached is not MISSING or _query_by_pk(endpoint, args):
        return lambda now: now.endpoints.get(key, MISSING) is cached and detail.unchanged_in(now.entities)
    entities, indexes = state.entities, state.indexes
    return lambda now: now.entities is entities and now.indexes is indexes and now.endpoints.get(key, MISSING) is cached


def _query_by_pk(endpoint: Endpoint[object], args: tuple[object, ...]) -> bool:
    """Whether the store query for `endpoint(*args)` reads one entity by a pk known from `args` alone."""
    node = compile_schema(endpoint.schema)
    if not (isinstance(node, type) and issubclass(node, Entity)):
        return False
    if getattr(node.query_key, "__func__", None) is not _ENTITY_QUERY:  # a subclass's own query may read more
        return False
    first = args[0] if args else None
    if isinstance(first, Mapping):
        return node.compute_pk(first, None, None, args) is not None
    return first is not None


def refs_of(detail: Denormalized | None) -> Refs:
    """The (entity key, pk) pairs a read touched (computed only when garbage collection needs them)."""
    return [] if detail is None else detail.refs


def entity_expiry(deps: Iterable[Dep], state: State) -> float:
    """The smallest `expires_at` of the entities a read touched (infinity when none)."""
    lowest = INF
    tables = state.entities_meta
    for key, pk, *_ in deps:
        table = tables.get(key)
        meta = None if table is None else table.get(pk)
        if meta is not None and meta["expires_at"] < lowest:
            lowest = meta["expires_at"]
    return lowest


def read_error(endpoint: Endpoint[object], args: tuple[object, ...], state: State) -> BaseException | None:
    """`meta[key].error`, hidden when the policy is soft and data is still stored."""
    key = endpoint.key(*args)
    meta = state.meta.get(key)
    if meta is None:
        return None
    error: BaseException | None = meta.get("error")
    if error is not None and meta.get("error_policy") == "soft" and key in state.endpoints:
        return None
    return error


def empty_form(endpoint: Endpoint[object], args: tuple[object, ...], state: State) -> object:
    """What a loading read shows: the stored result against empty entity tables (no stale entities)."""
    cached = state.endpoints.get(endpoint.key(*args))
    if cached is None:
        return None
    return denormalize(endpoint.schema, cached, EMPTY, args)


def bind_arguments(
    endpoint: Endpoint[object], args: tuple[object, ...], kwargs: Mapping[str, object]
) -> tuple[object, ...]:
    """`endpoint.bind(*args, **kwargs)`; ParamError when `endpoint` is not an endpoint at all.

    Every reader binds through it (the Controller and the UI hooks), so a wrong first
    argument is told as such instead of as an AttributeError from deep inside.
    """
    bind = getattr(endpoint, "bind", None)
    if bind is None or not callable(getattr(endpoint, "key", None)):
        raise ParamError(f"expected an endpoint (RestEndpoint, a resource's .get, ...), not {endpoint!r}")
    bound: tuple[object, ...] = bind(*args, **kwargs)
    return bound


def skips(args: tuple[object, ...], kwargs: Mapping[str, object]) -> bool:
    """Whether a read's arguments are the lone `None` that means "don't fetch" (`ctrl.dle(ep, None)`)."""
    return not kwargs and len(args) == 1 and args[0] is None


def needs_fetch(response: Response[object], now: float) -> bool:
    """Whether a reader should start a fetch: expired, or invalid."""
    return now > response.expires_at or response.expiry_status == ExpiryStatus.INVALID
