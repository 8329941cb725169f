"""`Collection`: a list (or `Values`) stored under a key built from the call arguments.

Because every list lives in the entity store keyed by its filter arguments,
a create, remove or move can find and update every stored list it belongs to.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, overload

from restlayer._text import to_text
from restlayer._typing import E, T, T_co
from restlayer.errors import DefinitionError, ParamError, RestLayerError, SchemaError
from restlayer.schema._base import INVALID, Schema, compile_schema, schema_name
from restlayer.schema._containers import Array, Object, Values
from restlayer.schema._entity import Meta
from restlayer.schema._frozen import FrozenDict
from restlayer.schema._union import Union

if TYPE_CHECKING:
    from restlayer.schema._denormalize import Unvisit
    from restlayer.schema._entity import Entity
    from restlayer.schema._normalize import Normalizer

#: Accepts or refuses a stored list by the values its key was built from.
KeyFilter = Callable[[Mapping[str, object]], bool]
#: `create_collection_filter(*args)`: a create's call arguments (none, the body, or params and body) -> the
#: test of a stored list's key. One callable type per arity, like `ArgsKey`, so a lambda's parameters are typed.
FilterFactory: TypeAlias = Callable[[], KeyFilter] | Callable[[Any], KeyFilter] | Callable[[Any, Any], KeyFilter]
#: Combines a stored list (or dict) of refs with incoming refs; both are stored JSON of the list's shape.
#: Two parameters, typed `Any` (not `Callable[..., ...]`), so that a lambda's are typed for pyright --strict.
Merge = Callable[[Any, Any], object]
#: Builds a stored list's key values from the call arguments: none, the params, or the params and the body.
#: One callable type per arity (not `Callable[..., ...]`) so that a lambda's parameters are typed (`Any`),
#: which pyright --strict needs; a function of `*args` matches them all.
ArgsKey: TypeAlias = (
    Callable[[], Mapping[str, object]]
    | Callable[[Any], Mapping[str, object]]
    | Callable[[Any, Any], Mapping[str, object]]
)
#: `paginated(remove_cursor)`: a page call's arguments -> the arguments of the list it extends; typed per
#: arity like `ArgsKey`, for the same reason.
CursorRemover: TypeAlias = (
    Callable[[], Iterable[object]] | Callable[[Any], Iterable[object]] | Callable[[Any, Any], Iterable[object]]
)
#: Builds a nested list's key values from its parent record (stored JSON) and member name.
NestKey = Callable[[Mapping[str, object], str], Mapping[str, object]]
NonFilter = Sequence[str] | str | re.Pattern[str] | Callable[[str], bool]
"""`non_filter_argument_keys`: argument names that do not decide list membership (names, a pattern, or a predicate)."""


@lru_cache(maxsize=4096)
def _parse_key(pk: str) -> Mapping[str, object]:
    parsed = json.loads(pk)
    return parsed if isinstance(parsed, dict) else {}


def _key_name(name: object) -> str:
    """An argument name as text: a str as given, any other (`1`, `None`) as the URL's search string writes it."""
    return name if type(name) is str else to_text(name)


def _text_named(value: object) -> object:
    """`value` with the names of every dict in it as text, at any depth.

    Sorting mixed names (`{1: "a", "b": 2}`) raised TypeError once the reply was in, so the
    request was sent and its reply lost; as text they sort, and match the URL's names.
    """
    if isinstance(value, Mapping):
        return {_key_name(k): _text_named(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_text_named(v) for v in value]
    return value


def serialize_key(values: Mapping[Any, object] | None) -> str:
    """Collection pk text: numbers and bools as text, `None` left out, names as text and sorted, compact JSON.

    Other values JSON cannot hold (dates, UUIDs, Decimals...) appear as the text the URL shows.
    """
    clean: dict[str, object] = {}
    for k, v in (values or {}).items():
        if v is None:
            continue
        clean[_key_name(k)] = to_text(v) if isinstance(v, (int, float)) else _text_named(v)
    return json.dumps(clean, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=to_text)


def _text_keyed(values: object) -> Mapping[str, object]:
    """Call arguments by text name, as `serialize_key` names them (the arguments themselves when all names are str)."""
    if not isinstance(values, Mapping):
        return {}
    if all(type(k) is str for k in values):
        return values
    return {_key_name(k): v for k, v in values.items()}


def _default_args_key(*args: object) -> Mapping[str, object]:
    first = args[0] if args else None
    return dict(first) if isinstance(first, Mapping) else {}


def _non_filter_predicate(option: NonFilter) -> Callable[[str], bool]:
    """The `non_filter_argument_keys` option (names, a regex or a callable) as a predicate on names."""
    if isinstance(option, re.Pattern):
        return lambda name: option.search(name) is not None
    if callable(option):
        return option
    if isinstance(option, str):
        return frozenset([option]).__contains__
    names = list(option) if isinstance(option, Iterable) and not isinstance(option, (Mapping, bytes)) else None
    if names is None or not all(isinstance(name, str) for name in names):
        # Anything else either failed later with a bare TypeError or named no argument at all (b"sort").
        raise DefinitionError(
            "non_filter_argument_keys must be argument names (str or a list of str), a compiled regex "
            f"or a function of a name, not {option!r}"
        )
    return frozenset(names).__contains__


# ----- merges ----------------------------------------------------------------------------
def push_merge(existing: Iterable[object], incoming: Iterable[object]) -> list[object]:
    return [*existing, *incoming]


def unshift_merge(existing: Iterable[object], incoming: Iterable[object]) -> list[object]:
    return [*incoming, *existing]


def values_merge(existing: Mapping[str, object], incoming: Mapping[str, object]) -> dict[str, object]:
    return {**existing, **incoming}


def values_unshift_merge(existing: Mapping[str, object], incoming: Mapping[str, object]) -> dict[str, object]:
    """A dict's `unshift`: the incoming entries first, then the existing ones they do not replace."""
    return {**incoming, **{k: v for k, v in existing.items() if k not in incoming}}


def append_unique_merge(existing: Iterable[object], incoming: Iterable[object]) -> list[object]:
    """Pagination: add the incoming pks not already present, keeping existing order."""
    seen = set(map(_ref_key, existing))
    return [*existing, *(pk for pk in incoming if _ref_key(pk) not in seen)]


def remove_merge(existing: Iterable[object], incoming: Iterable[object]) -> list[object]:
    gone = set(map(_ref_key, incoming))
    return [pk for pk in existing if _ref_key(pk) not in gone]


def values_remove_merge(
    existing: Mapping[str, object], incoming: Mapping[str, object] | Iterable[object]
) -> dict[str, object]:
    gone = set(map(_ref_key, incoming.values() if isinstance(incoming, Mapping) else incoming))
    return {k: v for k, v in existing.items() if _ref_key(v) not in gone}


def _placed(existing: Mapping[str, object], incoming: Iterable[tuple[str, object]]) -> dict[str, object]:
    """The `(pk, ref)` entries of a Values push or move, named for the stored dict `existing`.

    An entity the dict holds already keeps its entry (the server may name entries otherwise than
    by pk). Else its pk, unless another entity holds that name: two members of a Union may share
    a pk, and one would silently replace the other; the newcomer is then `<member>:<pk>`.
    """
    names = {_ref_key(ref): name for name, ref in existing.items()}
    taken = set(existing)
    placed: dict[str, object] = {}
    for pk, ref in incoming:
        identity = _ref_key(ref)
        name = names.get(identity)
        if name is None:
            name = f"{ref.get('schema')}:{pk}" if pk in taken and isinstance(ref, Mapping) else pk
            names[identity] = name
            taken.add(name)
        placed[name] = ref
    return placed


def _ref_key(ref: object) -> Hashable:
    """Hashable identity of a normalized reference (a pk, or a Union's id and schema)."""
    if isinstance(ref, Mapping):
        return (ref.get("id"), ref.get("schema"))
    return ref


if TYPE_CHECKING:

    class _ItemSchema(Protocol):
        """Typing only: `Collection([Todo]).push` (unshift, remove, move) reads the one `Todo` a call sends."""

        @overload
        def __get__(self, obj: Collection[list[T]], owner: object) -> Schema[T]: ...
        @overload
        def __get__(self, obj: Collection[object], owner: object) -> Schema[Any]: ...
        def __set__(self, obj: Collection[object], value: Schema[object]) -> None: ...

    class _AssignSchema(Protocol):
        """Typing only: `Collection(Values(Todo)).assign` reads the `dict[str, Todo]` a call sends."""

        @overload
        def __get__(self, obj: Collection[dict[str, T]], owner: object) -> Schema[dict[str, T]]: ...
        @overload
        def __get__(self, obj: Collection[object], owner: object) -> Schema[Any]: ...
        def __set__(self, obj: Collection[object], value: Schema[object]) -> None: ...


class Collection(Schema[T_co]):
    """A list or `Values` of entities stored under a key from the call arguments.

    `args_key(*args)` (default: the first argument) or, inside an entity,
    `nest_key(parent, key)` build the key; `non_filter_argument_keys` names
    arguments that do not decide membership (default: names starting `order`).
    A subclass may instead override the methods `non_filter_argument_keys(name)`
    and `create_collection_filter(*args)`; options given here win over both.
    """

    if TYPE_CHECKING:  # the derived schemas, typed from what the collection holds
        push: _ItemSchema
        unshift: _ItemSchema
        assign: _AssignSchema
        remove: _ItemSchema
        move: _ItemSchema

    @overload
    def __init__(
        self: Collection[list[E]],
        schema: list[type[E]],
        *,
        args_key: ArgsKey | None = ...,
        nest_key: NestKey | None = ...,
        non_filter_argument_keys: NonFilter | None = ...,
        create_collection_filter: FilterFactory | None = ...,
    ) -> None: ...
    @overload
    def __init__(
        self: Collection[list[T]],
        schema: list[Schema[T]],
        *,
        args_key: ArgsKey | None = ...,
        nest_key: NestKey | None = ...,
        non_filter_argument_keys: NonFilter | None = ...,
        create_collection_filter: FilterFactory | None = ...,
    ) -> None: ...
    @overload
    def __init__(
        self: Collection[list[Any]],
        schema: list[Any],
        *,
        args_key: ArgsKey | None = ...,
        nest_key: NestKey | None = ...,
        non_filter_argument_keys: NonFilter | None = ...,
        create_collection_filter: FilterFactory | None = ...,
    ) -> None: ...
    @overload
    def __init__(
        self,
        schema: Schema[T_co],
        *,
        args_key: ArgsKey | None = ...,
        nest_key: NestKey | None = ...,
        non_filter_argument_keys: NonFilter | None = ...,
        create_collection_filter: FilterFactory | None = ...,
    ) -> None: ...
    def __init__(
        self,
        schema: object,
        *,
        args_key: ArgsKey | None = None,
        nest_key: NestKey | None = None,
        non_filter_argument_keys: NonFilter | None = None,
        create_collection_filter: FilterFactory | None = None,
    ) -> None:
        self.schema = schema
        node = compile_schema(schema)
        if not isinstance(node, (Array, Values)):
            raise DefinitionError(f"Collection holds a list or Values schema, got {schema_name(node)}")
        self.node = node
        self.is_array = isinstance(node, Array)
        item = node.node
        item_key = getattr(item, "key", schema_name(item))
        self.key = f"[{item_key}]" if self.is_array else f"{{{item_key}}}"
        self.args_key: Callable[..., Mapping[str, object]] = args_key or _default_args_key
        self.nest_key = nest_key
        # Options replace the methods of this instance only, so a subclass's overrides
        # of these methods stay in force when the options are left out.
        if non_filter_argument_keys is not None:
            setattr(self, "non_filter_argument_keys", _non_filter_predicate(non_filter_argument_keys))  # noqa: B010
        if create_collection_filter is not None:
            setattr(self, "create_collection_filter", create_collection_filter)  # noqa: B010
        add = push_merge if self.is_array else values_merge
        removal = remove_merge if self.is_array else values_remove_merge
        # What a create/remove/move reads: one item for a call that sent one, else the list.
        # A Values collection is a dict: push/unshift put each created item under its pk (as move
        # does), at the end or the start; a list merge would turn the stored dict into a list of keys.
        by_pk = not self.is_array
        first = unshift_merge if self.is_array else values_unshift_merge
        self.push = _Adder(self, add, creating=True, by_pk=by_pk)
        self.unshift = _Adder(self, first, creating=True, by_pk=by_pk)
        self.assign = _Adder(self, values_merge, creating=True, misuse=None if by_pk else _LIST_ASSIGN)
        self.remove = _Adder(self, removal, creating=False)
        self.move = _Mover(self, add, removal)

    def __repr__(self) -> str:
        return f"Collection({self.key})"

    # ----- derived schemas ------------------------------------------------------------
    @overload
    def add_with(
        self: Collection[list[T]], merge: Merge, create_collection_filter: FilterFactory | None = None
    ) -> Schema[T]: ...
    @overload
    def add_with(self, merge: Merge, create_collection_filter: FilterFactory | None = None) -> Schema[Any]: ...
    def add_with(self, merge: Merge, create_collection_filter: FilterFactory | None = None) -> Schema[object]:
        """A create schema that merges new items into matching lists with `merge` (reads like `push`)."""
        return _Adder(self, merge, create_collection_filter, creating=True)

    @overload
    def move_with(self: Collection[list[T]], merge: Merge) -> Schema[T]: ...
    @overload
    def move_with(self, merge: Merge) -> Schema[Any]: ...
    def move_with(self, merge: Merge) -> Schema[object]:
        """A move schema that adds to the destination lists with `merge` (reads like `move`)."""
        return _Mover(self, merge, remove_merge if self.is_array else values_remove_merge)

    def paginated(self, remove_cursor: CursorRemover) -> Schema[T_co]:
        """Next-page schema: this same list (keyed by `remove_cursor(*args)`), unique items appended."""
        return _Paginator(self, remove_cursor)

    # ----- keys and filters (override these methods in a subclass, or pass the options) ----
    def non_filter_argument_keys(self, name: str) -> bool:
        """Whether argument `name` leaves list membership alone; default: names starting `order`."""
        return name.startswith("order")

    def create_collection_filter(self, *args: object) -> KeyFilter:
        """The test a stored list's key must pass to receive a create with these arguments."""
        return self.default_filter(*args)

    def pk(self, value: object, parent: object, key: str | None, args: tuple[object, ...]) -> str:
        """The stored list's key text for these arguments (or parent, when nested)."""
        if self.nest_key is not None and key is not None and isinstance(parent, Mapping):
            return serialize_key(_key_values(self.nest_key(parent, key), "nest_key"))
        return self.args_pk(args)

    def args_pk(self, args: tuple[object, ...]) -> str:
        """The key text `args_key(*args)` names."""
        return serialize_key(_key_values(self.args_key(*args), "args_key"))

    def default_filter(self, *args: object) -> KeyFilter:
        """Accept a stored list when each of its key values equals the first or second argument's."""
        first = _text_keyed(args[0] if args else None)
        second = _text_keyed(args[1] if len(args) > 1 else None)
        non_filter = self.non_filter_argument_keys

        def accept(key_values: Mapping[str, object]) -> bool:
            for name, want in key_values.items():
                if non_filter(name):
                    continue
                if _matches(first, name, want) or _matches(second, name, want):
                    continue
                return False
            return True

        return accept

    # ----- store-merge hooks (the same protocol entities offer) -----------------------------
    indexes: tuple[str, ...] = ()
    _plain_store = True

    def merge(self, existing: object, incoming: object) -> object:
        """A refetched list replaces the stored one."""
        return incoming

    def merge_with_store(self, existing_meta: Meta, incoming_meta: Meta, existing: object, incoming: object) -> object:
        """Stored lists are not mappings: the newer fetch wins (the deletion marker always loses)."""
        if existing is INVALID or incoming_meta["fetched_at"] >= existing_meta["fetched_at"]:
            return incoming
        return existing

    def merge_meta_with_store(
        self, existing_meta: Meta, incoming_meta: Meta, existing: object, incoming: object
    ) -> Meta:
        """The meta that goes with `merge_with_store`'s choice."""
        if existing is INVALID or incoming_meta["fetched_at"] >= existing_meta["fetched_at"]:
            return incoming_meta
        return existing_meta

    # ----- schema protocol ------------------------------------------------------------
    def normalize_value(self, value: object, parent: object, key: str | None, ctx: Normalizer) -> object:
        pk = self.pk(value, parent, key, ctx.args)
        ctx.store(self, pk, self.node.normalize_value(value, parent, key, ctx))
        return pk

    def denormalize_value(
        self, value: Any, unvisit: Unvisit
    ) -> object:  # a stored list's pk, or the list (as Array/Values take it)
        if not isinstance(value, str):
            return self.node.denormalize_value(value, unvisit)
        return unvisit.collection(self, value)

    def query_key(self, args: tuple[object, ...], unvisit: Unvisit) -> object:
        pk = self.args_pk(args)
        table = unvisit.entities.get(self.key)
        return pk if table is not None and table.get(pk) is not None else None


def _key_values(values: object, hook: str) -> Mapping[str, object] | None:
    """What `args_key`/`nest_key` returned, checked: a dict of key values (or None, no values).

    Anything else failed deep inside serialization with a bare AttributeError.
    """
    if values is None or isinstance(values, Mapping):
        return values
    raise DefinitionError(f"Collection {hook} must return a dict of key values, not {type(values).__name__}")


def _key_filter(factory: Callable[..., KeyFilter], *args: object) -> KeyFilter:
    """`factory(*args)`, checked: the test of a stored list's key values (else a bare TypeError later)."""
    accept = factory(*args)
    if not callable(accept):
        raise DefinitionError(
            "create_collection_filter must return a function of a list's key values (dict -> bool), "
            f"not {type(accept).__name__}"
        )
    return accept


def _matches(values: Mapping[str, object], name: str, want: object) -> bool:
    got = values.get(name)
    return got is not None and to_text(got) == want


#: Why a list Collection's `assign` cannot be used: it merges `{name: item}` entries into a dict.
_LIST_ASSIGN = (
    "assign merges {name: item} entries into a Values collection; this collection is a list: use push or unshift"
)


def misuse_of(schema: object) -> str | None:
    """Why `schema` cannot be used at all (a list Collection's `assign`), or None when it can.

    An endpoint asks before sending, so a call that could never be stored sends nothing.
    """
    misuse = getattr(schema, "misuse", None)
    return misuse if isinstance(misuse, str) else None


class _Adder(Schema[object]):
    """Normalizes the response, then merges its refs into every accepted stored list."""

    def __init__(
        self,
        collection: Collection[object],
        merge: Merge,
        create_collection_filter: FilterFactory | None = None,
        *,
        creating: bool,
        by_pk: bool = False,
        misuse: str | None = None,
    ) -> None:
        # Set for a derived schema that cannot work with this collection (`misuse_of` reads it).
        self.misuse = misuse
        self.collection = collection
        self.key = collection.key
        self.merge = merge
        self.create_collection_filter = create_collection_filter
        self.creating = creating
        # A Values collection's push/unshift: the reply is one item (or a list), not a dict of entries.
        self.by_pk = by_pk

    def __repr__(self) -> str:
        return f"{self.collection!r}.{getattr(self.merge, '__name__', 'merge')}"

    def normalize_value(self, value: object, parent: object, key: str | None, ctx: Normalizer) -> object:
        if self.misuse is not None:
            raise ParamError(f"{self.collection!r}: {self.misuse}")
        coll = self.collection
        if coll.is_array and not isinstance(value, (list, tuple)):
            value = [value]
        was_creating = ctx.creating
        ctx.creating = self.creating or was_creating
        normalized: object
        try:
            if self.by_pk:
                normalized = self._normalize_by_pk(value, parent, key, ctx)
            else:
                if not coll.is_array:
                    self._check_entries(value)
                normalized = coll.node.normalize_value(value, parent, key, ctx)
        finally:
            ctx.creating = was_creating
        accept = _key_filter(self.create_collection_filter or coll.create_collection_filter, *ctx.args)
        for list_key in ctx.keys_of(self.key):
            if accept(_parse_key(list_key)):
                current = ctx.get(self.key, list_key)
                if current is not None and current is not INVALID:
                    ctx.replace(self.key, list_key, self.merge(current, self._named_for(current, normalized)))
        return normalized

    def _named_for(self, current: object, normalized: object) -> object:
        """`normalized` as merged into the stored `current`: a Values push names its entries for that dict."""
        if self.by_pk and isinstance(current, Mapping) and isinstance(normalized, Mapping):
            return _placed(current, normalized.items())
        return normalized

    def _check_entries(self, value: object) -> None:
        """A Values collection's assign/remove takes `{name: item}`; refuse a single record before storing.

        A record's own fields (`"title": "x"`) would otherwise be read as entries naming refs (Todo "x").
        """
        if not isinstance(value, Mapping):
            return  # the Values schema itself reports a value that is no object
        for name, item in value.items():
            if item is not None and not isinstance(item, Mapping):
                raise SchemaError(
                    f"{self.collection!r} expects {{name: item}}, found a value of {type(item).__name__} "
                    "(a single record? send it as {name: record})",
                    schema=repr(self.collection),
                    path=(name,),
                )

    def _normalize_by_pk(
        self, value: object, parent: object, key: str | None, ctx: Normalizer
    ) -> FrozenDict[str, object]:
        """One item (or a list of them) for a Values collection: each stored, as `{pk: ref}`."""
        member = self.collection.node.node
        if member is None:
            raise SchemaError("A Values Collection's push/unshift needs an Entity or Union member", schema=repr(self))
        items = value if isinstance(value, (list, tuple)) else [value]
        entries: list[tuple[str, object]] = []
        for index, item in enumerate(items):
            try:
                ref = member.normalize_value(item, parent, key, ctx)
            except SchemaError as exc:
                if items is not value:
                    raise
                exc.path = (index, *exc.path)
                raise
            pk = ref.get("id") if isinstance(ref, Mapping) else ref  # a Union's ref names its pk
            if not isinstance(pk, str) or not pk:
                raise SchemaError(
                    "Missing usable primary key: a Values Collection keeps each item under its pk",
                    schema=repr(self),
                    path=(index,) if items is value else (),
                )
            entries.append((pk, ref))
        return FrozenDict(_placed({}, entries))

    def denormalize_value(self, value: object, unvisit: Unvisit) -> object:
        return _denormalize_items(self.collection, value, unvisit)


def _one_item_call(args: tuple[object, ...]) -> bool:
    """Whether a create/remove/move call sent one object (its last argument, the body, is no list)."""
    return bool(args) and not isinstance(args[-1], (list, tuple))


def _denormalize_items(
    collection: Collection[object], value: Any, unvisit: Unvisit
) -> object:  # stored refs (as Array/Values take them)
    """A create/remove/move result: the stored refs are always a list; a call that sent one object reads one item.

    Only a result of one ref reads as one item: a reply of several items (sent for one object, or
    read with arguments that end in the call's params rather than a body) reads as the list, never
    as its first item with the others dropped.
    """
    node = collection.node
    if not isinstance(node, Array):
        return node.denormalize_value(value, unvisit)
    if isinstance(value, list):
        items = node.denormalize_value(value, unvisit)
        if len(value) != 1 or not _one_item_call(unvisit.args):
            return items
    else:  # one ref (or one raw object) stands for one item
        items = node.denormalize_value([value], unvisit)
    return items[0] if items else None


def cursor_args(remove_cursor: Callable[..., Iterable[object]], args: tuple[object, ...]) -> tuple[object, ...]:
    """The list endpoint's arguments for a page call's `args`: `remove_cursor(*args)`, checked.

    It must give a list of arguments (`[params]`): the params dict itself would be read as the
    arguments (its names) and key the page to the wrong list, and None would fail deep inside.
    It is the user's function, run by `key()` and every read: what it raises (but a RestLayerError)
    becomes a RestLayerError naming it, the original as its cause, as an overridden `key()` raising does.
    """
    label = getattr(remove_cursor, "__name__", remove_cursor)
    try:
        base = remove_cursor(*args)
    except RestLayerError:
        raise
    except Exception as exc:
        raise RestLayerError(f"remove_cursor {label!r} raised {type(exc).__name__}: {exc}") from exc
    if isinstance(base, (Mapping, str, bytes)) or not isinstance(base, Iterable):
        raise ParamError(
            f"remove_cursor {label!r} must return the list endpoint's "
            f"arguments as a list (such as [params]), not {type(base).__name__}"
        )
    return tuple(base)


def _add_page(current: object, page: object) -> object:
    """The stored list (or `Values` dict) with a next page added; the page alone when there is none yet."""
    if isinstance(current, list) and isinstance(page, list):
        return append_unique_merge(current, page)
    if isinstance(current, Mapping) and isinstance(page, Mapping):
        return values_merge(current, page)  # a dict's entries are unique by name: the page's are added
    return page


class _Paginator(Schema[T_co]):
    """A page of a list: stored into the list keyed by `remove_cursor(*args)`, appending new refs; reads the list."""

    def __init__(self, collection: Collection[T_co], remove_cursor: CursorRemover) -> None:
        self.collection = collection
        self.key = collection.key
        self.remove_cursor: Callable[..., Iterable[object]] = remove_cursor

    def __repr__(self) -> str:
        return f"Pagination({self.collection!r})"

    def normalize_value(self, value: object, parent: object, key: str | None, ctx: Normalizer) -> object:
        coll = self.collection
        pk = coll.pk(value, parent, key, cursor_args(self.remove_cursor, ctx.args))
        page = coll.node.normalize_value(value, parent, key, ctx)
        current = ctx.get(self.key, pk)
        ctx.replace(self.key, pk, _add_page(current, page))
        return pk

    def denormalize_value(self, value: object, unvisit: Unvisit) -> object:
        return self.collection.denormalize_value(value, unvisit)

    def query_key(self, args: tuple[object, ...], unvisit: Unvisit) -> object:
        return self.collection.query_key(cursor_args(self.remove_cursor, args), unvisit)


class _Mover(Schema[object]):
    """Moves each item from the lists matching its stored values to those matching its new ones."""

    def __init__(self, collection: Collection[object], add: Merge, remove: Merge) -> None:
        self.collection = collection
        self.key = collection.key
        self.add = add
        self.remove = remove

    def __repr__(self) -> str:
        return f"{self.collection!r}.move"

    def normalize_value(self, value: object, parent: object, key: str | None, ctx: Normalizer) -> object:
        coll = self.collection
        node = coll.node
        items: list[object] = list(value) if isinstance(node, Array) and isinstance(value, (list, tuple)) else [value]
        before = []
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise SchemaError(
                    f"A move takes objects, found {type(item).__name__}",
                    schema=repr(self),
                    path=(index,) if item is not value else (),
                )
            before.append(self._before(item, parent, key, ctx))
        normalized: object
        if isinstance(node, Array):
            normalized = node.normalize_value(items, parent, key, ctx)
            refs: list[object] = [[ref] for ref in normalized]
        else:  # a Values collection: the moved entity goes under its pk
            pk = before[0][2]
            if pk is None:
                raise SchemaError("Missing usable primary key", schema=repr(self))
            normalized = node.normalize_value({pk: value}, parent, key, ctx)
            refs = [normalized]
        for ref, (processed, stored, _) in zip(refs, before, strict=False):
            self._move(ref, processed, stored, ctx)
        return normalized

    def _before(
        self, item: Mapping[str, object], parent: object, key: str | None, ctx: Normalizer
    ) -> tuple[Mapping[str, object], Mapping[str, object] | None, str | None]:
        """An item's processed reply, its stored record (if any) and its pk, read before it is stored."""
        entity = self._entity_of(item, parent, key)
        processed = entity.process(item, parent, key, ctx.args)
        if processed is None:
            raise SchemaError(f"{entity.key}.process() returned None for a moved item", schema=repr(self))
        pk = entity.compute_pk(processed, parent, key, ctx.args)
        stored = ctx.get(entity.key, pk) if pk else None
        return processed, stored if isinstance(stored, Mapping) else None, pk

    def _entity_of(self, item: Mapping[str, object], parent: object, key: str | None) -> type[Entity]:
        """The entity class a moved item is stored as: the collection's, or the Union member the item names."""
        member = self.collection.node.node
        if isinstance(member, Union):
            name, entity = member.pick(item, parent, key)
            if entity is None:
                raise SchemaError(
                    f"A moved item of type {name!r} names no member of {member!r}, so it has no stored record to move",
                    schema=repr(self),
                )
            return entity
        if not isinstance(member, type):
            raise SchemaError("A move needs a Collection of an Entity type or a Union", schema=repr(self))
        return member

    def _move(
        self, ref: object, processed: Mapping[str, object], stored: Mapping[str, object] | None, ctx: Normalizer
    ) -> None:
        """Take `ref` out of the stored collections it leaves and into those it joins."""
        coll = self.collection
        args = ctx.args
        first: Mapping[str, object] = args[0] if args and isinstance(args[0], Mapping) else {}
        last: Mapping[str, object] = args[-1] if args and isinstance(args[-1], Mapping) else {}
        new_values = {**last, **processed}
        merged = {**stored, **new_values} if stored else new_values
        leave = _key_filter(coll.create_collection_filter, {**first, **stored}, stored) if stored else None
        join = _key_filter(coll.create_collection_filter, {**first, **new_values}, merged)
        for list_key in ctx.keys_of(self.key):
            key_values = _parse_key(list_key)
            out = leave(key_values) if leave else False
            if out == join(key_values):
                continue
            current = ctx.get(self.key, list_key)
            if isinstance(current, (list, Mapping)):
                if out:
                    ctx.replace(self.key, list_key, self.remove(current, ref))
                else:
                    named = (
                        _placed(current, ref.items())
                        if isinstance(current, Mapping) and isinstance(ref, Mapping)
                        else ref
                    )
                    ctx.replace(self.key, list_key, self.add(current, named))

    def denormalize_value(self, value: object, unvisit: Unvisit) -> object:
        return _denormalize_items(self.collection, value, unvisit)


def find_collection(schema: object) -> Collection[object] | None:
    """The first Collection inside `schema` (itself, or inside a dict/list/Object/Array)."""
    if isinstance(schema, Collection):
        return schema
    if isinstance(schema, (Object, Array)):
        schema = schema.schema
    if isinstance(schema, Mapping):
        for member in schema.values():
            found = find_collection(member)
            if found is not None:
                return found
    elif isinstance(schema, list) and schema:
        return find_collection(schema[0])
    return None


def check_args_key(schema: object, args: tuple[object, ...]) -> None:
    """Build the key the reply of a call with `args` will be stored under, to refuse the call before sending.

    An `args_key` that fails on these arguments (a missing member, not a dict) failed only once the
    reply was in, so the request was sent and its reply lost. Its error is a `ParamError` here.
    """
    coll = find_collection(schema)
    if coll is None or coll.nest_key is not None:
        return
    try:
        coll.args_pk(args)
    except RestLayerError:
        raise
    except Exception as exc:
        raise ParamError(f"{coll!r}: args_key raised {type(exc).__name__}: {exc}") from exc


def replace_collection(schema: object, new: Schema[object]) -> object:
    """A copy of `schema` with its Collection replaced by `new` (other parts shared)."""
    if isinstance(schema, Collection):
        return new
    if isinstance(schema, Object):
        return Object({k: replace_collection(v, new) for k, v in schema.schema.items()})
    if isinstance(schema, Array):
        return Array(replace_collection(schema.schema, new))  # type: ignore[call-overload]  # same shape
    if isinstance(schema, Mapping):
        return {k: replace_collection(v, new) for k, v in schema.items()}
    if isinstance(schema, list) and schema:
        return [replace_collection(schema[0], new)]
    return schema
