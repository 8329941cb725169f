"""The store's immutable state: persistent tables plus pending optimistic fetches.

Every table is a `PMap`, so an update builds new versions in O(log n) and a
state handed out earlier never changes. Read by attribute or by key
(`state.endpoints`, `state["endpoints"]`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, overload

from restlayer._pmap import EMPTY, PMap
from restlayer._sentinel import Sentinel

if TYPE_CHECKING:
    from typing_extensions import TypedDict, Unpack

    from restlayer.core._actions import Fetch
    from restlayer.schema._base import InvalidType

    #: A stored entity row: the record (a list or dict of pks for a collection), or `INVALID` once deleted.
    Record: TypeAlias = "Mapping[str, object] | list[object] | InvalidType"

    class EndpointMeta(TypedDict, total=False):
        """What the store keeps about one endpoint key besides its result (times in ms)."""

        fetched_at: float
        date: float
        expires_at: float
        prev_expires_at: float | None
        error: BaseException | None
        error_policy: str | None
        invalidated: bool


#: entity key -> pk -> stored record.
Table = PMap[str, PMap[str, "Record"]]
#: entity key -> pk -> `{"fetched_at", "date", "expires_at"}` (what `normalize` writes).
MetaTable = PMap[str, PMap[str, Mapping[str, float]]]
#: entity key -> field -> value -> pk.
IndexTable = PMap[str, PMap[str, PMap[str, "str | InvalidType"]]]
K = TypeVar("K")
V = TypeVar("V")


def _empty() -> PMap[K, V]:
    """An empty table of whatever the field holds (one shared empty map)."""
    return EMPTY


@dataclass(frozen=True, eq=False)
class State(Mapping[str, object]):
    """One version of the store; `replace(state, endpoints=...)` derives the next."""

    entities: Table = field(default_factory=_empty)
    indexes: IndexTable = field(default_factory=_empty)
    entities_meta: MetaTable = field(default_factory=_empty)
    endpoints: PMap[str, object] = field(default_factory=_empty)  # normalized results (pks for entities)
    meta: PMap[str, EndpointMeta] = field(default_factory=_empty)
    optimistic: tuple[Fetch, ...] = ()
    last_reset: float = 0

    @overload
    def __getitem__(self, name: Literal["entities"]) -> Table: ...
    @overload
    def __getitem__(self, name: Literal["indexes"]) -> IndexTable: ...
    @overload
    def __getitem__(self, name: Literal["entities_meta"]) -> MetaTable: ...
    @overload
    def __getitem__(self, name: Literal["endpoints"]) -> PMap[str, object]: ...
    @overload
    def __getitem__(self, name: Literal["meta"]) -> PMap[str, EndpointMeta]: ...
    @overload
    def __getitem__(self, name: Literal["optimistic"]) -> tuple[Fetch, ...]: ...
    @overload
    def __getitem__(self, name: Literal["last_reset"]) -> float: ...
    @overload
    def __getitem__(self, name: str) -> object: ...
    def __getitem__(self, name: str) -> object:
        if name not in _FIELDS:
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(_FIELDS)

    def __len__(self) -> int:
        return len(_FIELDS)

    def __repr__(self) -> str:
        return (
            f"State(entities={len(self.entities)} types, endpoints={len(self.endpoints)}, "
            f"optimistic={len(self.optimistic)}, last_reset={self.last_reset})"
        )

    def evolve(self, **changes: Unpack[_Tables]) -> State:
        """A new state with some tables replaced (the others shared).

        `dataclasses.replace` without its per-call field walk: every store change makes one.
        """
        if not _FIELD_SET.issuperset(changes):
            return replace(self, **changes)  # raises the TypeError naming the unknown field
        new = object.__new__(type(self))
        values = new.__dict__
        values.update(self.__dict__)
        values.update(changes)
        return new

    def to_dict(self) -> dict[str, Any]:  # arbitrary JSON (by `_plain`) for the caller to read into
        """The store as plain JSON-able data, e.g. `json.dumps(ctrl.get_state().to_dict())` to inspect it.

        Tables become dicts, a deleted entity the string `"INVALID"`, a stored error
        `{"error": class name, "message": ..., "status": ...}`, and each pending
        optimistic update its key.
        """
        plain = {name: _plain(getattr(self, name)) for name in _FIELDS if name != "optimistic"}
        plain["optimistic"] = [fetch.key for fetch in self.optimistic]
        return plain


if TYPE_CHECKING:

    class _Tables(TypedDict, total=False):
        """What `State.evolve` may replace: any of the fields, with their own types."""

        entities: Table
        indexes: IndexTable
        entities_meta: MetaTable
        endpoints: PMap[str, object]
        meta: PMap[str, EndpointMeta]
        optimistic: tuple[Fetch, ...]
        last_reset: float


_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(State))
_FIELD_SET = frozenset(_FIELDS)


def _plain(value: object) -> object:
    """`value` as JSON-able data: mappings, sequences, scalars; anything else as its text."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if isinstance(value, BaseException):
        return {"error": type(value).__name__, "message": str(value), "status": getattr(value, "status", None)}
    if isinstance(value, Sentinel):
        return repr(value)
    return str(value)


EMPTY_STATE = State()
