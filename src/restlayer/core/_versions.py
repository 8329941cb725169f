"""Schema fingerprints: which version of an entity class or endpoint schema wrote a shared row.

In a rolling deploy two versions of a program share one store. A row written by
a class whose fields or nested members differ from the local class's would be
read as the local one's (an old field kept beside its renamed one, an edit seen
through the wrong member). So the shared manager names every row it stores by
its key *and* the fingerprint of the schema that wrote it (`Todo#3fa2...`), and
takes in only rows under a fingerprint of a schema this process defines: the
versions share nothing, each fetches its own.

A fingerprint is a short, stable hash (the same in every process and run) of a
schema's shape: an entity class's key, field names and nested members (the
nested classes' shapes too; a cycle back to a class being hashed stops at its key).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping

from restlayer.schema import Entity

_SEP = "#"
_LENGTH = 16  # hex digits kept: 64 bits, enough to tell a program's schemas apart


def fingerprint(schema: object) -> str:
    """The stable fingerprint of `schema`'s shape (an entity class, a collection, a list, a dict...)."""
    text = json.dumps(_shape(schema, ()), separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:_LENGTH]


def _shape(schema: object, active: tuple[int, ...]) -> object:
    """A JSON value describing `schema`; `active`: the ids of the schemas being described (cycles)."""
    if id(schema) in active:
        return ["cycle", getattr(schema, "key", None) if isinstance(getattr(schema, "key", None), str) else None]
    inner = (*active, id(schema))
    if isinstance(schema, type) and issubclass(schema, Entity):
        members = {str(name): _shape(member, inner) for name, member in schema.schema.items()}
        return ["entity", schema.key, sorted(schema.field_names()), members]
    if isinstance(schema, Mapping):
        return ["object", {str(name): _shape(member, inner) for name, member in schema.items()}]
    if isinstance(schema, (list, tuple)):
        return ["array", [_shape(member, inner) for member in schema]]
    if schema is None or isinstance(schema, (str, int, float, bool)):
        return ["value", repr(schema)]
    if isinstance(schema, type):
        return ["class", schema.__qualname__]
    collection = getattr(schema, "collection", None)  # a push / move / page of a collection: its rows
    if collection is not None and collection is not schema:
        return _shape(collection, active)
    key = getattr(schema, "key", None)
    parts: list[object] = [type(schema).__qualname__, key if isinstance(key, str) else None]
    for name in ("schema", "schemas"):
        if hasattr(schema, name):
            parts.append(_shape(getattr(schema, name), inner))
    return parts


def row_keys(schema: object) -> dict[str, str]:
    """The fingerprint of every entity key (entity class, collection) `schema` stores rows under."""
    return _described(schema)[0]


def schema_fingerprint(schema: object) -> str:
    """`fingerprint(schema)`, remembered while the classes it reaches keep their members (every write asks)."""
    return _described(schema)[1]


#: schema id -> (the schema, the signature of the classes it reaches, its row keys' fingerprints, its own)
_DESCRIBED: dict[int, tuple[object, tuple[tuple[int, int, tuple[str, ...]], ...], dict[str, str], str]] = {}
_DESCRIBED_MAX = 1024


def _described(schema: object) -> tuple[dict[str, str], str]:
    """The row keys' fingerprints and the fingerprint of `schema`, hashed again only when it changed.

    Hashing a schema takes a fraction of a millisecond, and each shared fetch and write needs it:
    remembered, checked against the identity of each reached class's members (an entity's
    `schema` assigned after the class was made, as cycles are, makes another fingerprint).
    """
    owners = list(_owners(schema, set()))
    signature = tuple((id(o), id(getattr(o, "schema", None)), _field_names(o)) for o in owners)
    found = _DESCRIBED.get(id(schema))
    if found is not None and found[0] is schema and found[1] == signature:
        return found[2], found[3]
    keys: dict[str, str] = {}
    for owner in owners:
        key = getattr(owner, "key", None)
        if isinstance(key, str) and key not in keys:
            keys[key] = fingerprint(owner)
    own = fingerprint(schema)
    if len(_DESCRIBED) >= _DESCRIBED_MAX:  # schemas made on the fly: forget them all, rather than grow
        _DESCRIBED.clear()
    _DESCRIBED[id(schema)] = (schema, signature, keys, own)
    return keys, own


def _field_names(owner: object) -> tuple[str, ...]:
    """An entity class's field names (a collection has none)."""
    return owner.field_names() if isinstance(owner, type) and issubclass(owner, Entity) else ()


def _owners(schema: object, seen: set[int]) -> Iterator[object]:
    """Every entity class and collection reachable from `schema` (each once)."""
    if id(schema) in seen or schema is None or isinstance(schema, (str, int, float, bool)):
        return
    seen.add(id(schema))
    if isinstance(schema, type):
        if issubclass(schema, Entity):
            yield schema
            for member in schema.schema.values():
                yield from _owners(member, seen)
        return
    if isinstance(schema, Mapping):
        for member in schema.values():
            yield from _owners(member, seen)
        return
    if isinstance(schema, (list, tuple)):
        for member in schema:
            yield from _owners(member, seen)
        return
    collection = getattr(schema, "collection", None)
    if collection is not None and collection is not schema:
        yield from _owners(collection, seen)
        return
    if _is_collection(schema):
        yield schema
    for name in ("schema", "schemas"):
        if hasattr(schema, name):
            yield from _owners(getattr(schema, name), seen)


def _is_collection(schema: object) -> bool:
    from restlayer.schema import Collection

    return isinstance(schema, Collection)


def versioned(key: str, fp: str) -> str:
    """The store key of local key `key` written by the schema of fingerprint `fp`."""
    return f"{key}{_SEP}{fp}"


def unversioned(store_key: str) -> tuple[str, str] | None:
    """(local key, fingerprint) of a store key, or None for a key no fingerprint names (another program's)."""
    key, sep, fp = store_key.rpartition(_SEP)
    if not sep or len(fp) != _LENGTH or any(c not in "0123456789abcdef" for c in fp):
        return None
    return key, fp


_PENDING_MAX = 1024


class Known:
    """The fingerprints of the schemas this process defines: rows under any other are another version's.

    Filled from the schemas the process stores data with (endpoints note theirs when
    made, the shared manager each schema it writes) and, on a miss, from every
    entity class defined. Only grows with the program's distinct schema shapes.
    """

    def __init__(self) -> None:
        self._rows: dict[str, set[str]] = {}
        self._endpoints: set[str] = set()
        self._classes = 0  # entity classes seen by the last scan
        # Schemas of endpoints made since the last look (by id), described only when a shared store asks:
        # making an endpoint stays cheap for every program, including those that share nothing.
        self._pending: dict[int, object] = {}

    def defer(self, schema: object) -> None:
        """Remember `schema` (an endpoint's, when it is made) to be noted at the next question.

        Past `_PENDING_MAX` waiting (endpoints made on the fly), they are noted at once: the
        registry then holds fingerprints, bounded by the program's schema shapes, not schemas.
        """
        self._pending[id(schema)] = schema
        if len(self._pending) >= _PENDING_MAX:
            self._note_pending()

    def note(self, schema: object) -> str:
        """Record `schema` (an endpoint's) and every row key it stores; its fingerprint."""
        keys, fp = _described(schema)
        for key, owned in keys.items():
            self._rows.setdefault(key, set()).add(owned)
        self._endpoints.add(fp)
        return fp

    @property
    def endpoints(self) -> set[str]:
        """The fingerprints of every endpoint schema this process defines."""
        self._note_pending()
        return self._endpoints

    def row(self, store_key: str) -> str | None:
        """The local entity key of a stored row's key, or None when another version (or program) wrote it."""
        parsed = unversioned(store_key)
        if parsed is None:
            return None
        self._note_pending()
        key, fp = parsed
        if fp not in self._rows.get(key, ()) and not self._scanned(key, fp):
            return None
        return key

    def endpoint(self, store_key: str) -> str | None:
        """The local endpoint key of a stored endpoint key, or None when another version (or program) wrote it."""
        parsed = unversioned(store_key)
        return None if parsed is None or parsed[1] not in self.endpoints else parsed[0]

    def _note_pending(self) -> None:
        """Note the schemas deferred since the last question (one that cannot be described is skipped:
        its rows are only read through, never taken from the store)."""
        while self._pending:
            _, schema = self._pending.popitem()
            try:
                self.note(schema)
            except Exception:
                continue

    def _scanned(self, key: str, fp: str) -> bool:
        """Whether an entity class defined since the last look (or changed) stores `key` rows under `fp`."""
        classes = list(_subclasses(Entity))
        if len(classes) == self._classes:
            return False
        self._classes = len(classes)
        for cls in classes:
            for owned, owned_fp in row_keys(cls).items():
                self._rows.setdefault(owned, set()).add(owned_fp)
        return fp in self._rows.get(key, ())


def _subclasses(cls: type[Entity]) -> Iterator[type[Entity]]:
    """Every subclass of `cls`, however deep."""
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


#: The schemas of this process (one set for every controller: the code, not a controller, defines them).
KNOWN = Known()


def note_endpoint(schema: object) -> None:
    """Called when an endpoint is made: its schema's rows, stored by another run, are this version's."""
    KNOWN.defer(schema)


__all__ = [
    "KNOWN",
    "Known",
    "fingerprint",
    "note_endpoint",
    "row_keys",
    "schema_fingerprint",
    "unversioned",
    "versioned",
]
