"""`Entity`: a record type with a primary key, stored once in the entity table.

Subclasses declare fields as annotated class attributes with defaults. Instances
returned by denormalization are immutable, compare by value, and carry every
stored member (undeclared keys too).
"""

from __future__ import annotations

import copy
import inspect
import reprlib
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from restlayer._text import to_text
from restlayer._typing import Self, dataclass_transform
from restlayer.errors import DefinitionError, ParamError, RestLayerError, SchemaError
from restlayer.schema._annotated import annotated_schemas
from restlayer.schema._base import INVALID, MAX_DEPTH, InvalidType, Node, compile_schema, normalize_members
from restlayer.schema._frozen import CONTAINERS as _CONTAINERS
from restlayer.schema._frozen import freeze, freeze_members

if TYPE_CHECKING:
    from restlayer.schema._denormalize import Unvisit
    from restlayer.schema._normalize import Normalizer

#: A stored record's meta: `fetched_at`, `date`, `expires_at` (milliseconds).
Meta = Mapping[str, float]
_SETTINGS = ("key", "schema", "indexes")
_UNUSABLE_PKS = (None, "", "undefined")
_MUTABLE = (list, dict, set, bytearray)
#: Values that cannot be a primary key (their text would be a repr).
_PK_CONTAINERS = (Mapping, list, tuple, set, frozenset, bytes, bytearray)


def call_hook(schema: object, name: str, *args: object, reading: Mapping[str, object] | None = None) -> Any:
    """`schema.name(*args)`: a user hook (process, pk, validate, merge, from_json...) may raise anything.

    Any failure but a RestLayerError becomes one naming the hook, the original as `__cause__`: while
    normalizing a SchemaError (status 400, nothing is stored); while reading the stored record `reading`,
    a RestLayerError naming that record.
    """
    try:
        return getattr(schema, name)(*args)
    except RestLayerError:
        raise
    except Exception as exc:
        label = getattr(schema, "__name__", type(schema).__name__)
        text = f"{label}.{name} raised {type(exc).__name__}: {exc}"
        key = str(getattr(schema, "key", ""))
        if reading is not None:
            raise RestLayerError(f"{text} (reading {key} {reading.get('id')!r})") from exc
        raise SchemaError(text, schema=key) from exc


def usable_pk(pk: str | None) -> str | None:
    """`pk`, or None when it cannot name an entity (missing, empty, or the text "undefined")."""
    return None if pk in _UNUSABLE_PKS else pk


def _with_text_id(record: dict[str, object]) -> dict[str, object]:
    """`record`, or a copy whose numeric `id` (not a bool) is its text: what a `_text_id` class stores."""
    ident = record.get("id")
    if isinstance(ident, (int, float)) and not isinstance(ident, bool):
        return {**record, "id": to_text(ident)}
    return record


def _is_classvar(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return "ClassVar" in text


#: The (entity, entity) pairs `==` is comparing in this thread: a cycle back to one decides nothing.
_comparing = threading.local()


@dataclass_transform(kw_only_default=True, frozen_default=True, eq_default=True)
class Entity:
    """A normalized record type: typed fields with defaults, a primary key, nested schemas.

    Type checkers see a keyword-only, frozen dataclass: `Todo(title="x")` is
    checked against the fields and `todo.title` has the declared type.

    Override `pk`, `process`, `merge`, `merge_with_store`,
    `merge_meta_with_store`, `should_update`, `should_reorder`, `validate` or
    `from_json` to change how records are keyed, stored and built.
    """

    key: ClassVar[str] = "Entity"
    schema: ClassVar[Mapping[str, object]] = {}
    indexes: ClassVar[tuple[str, ...]] = ()

    # Filled by __init_subclass__ / on first use; private machinery.
    _defaults: ClassVar[dict[str, object]] = {}
    _mutable_defaults: ClassVar[tuple[str, ...]] = ()
    _truthy_defaults: ClassVar[frozenset[str]] = frozenset()
    _nested: ClassVar[dict[str, Node | None]] = {}
    _nested_for: ClassVar[Mapping[str, object] | None] = None
    _plain_pk: ClassVar[bool] = True
    _plain_build: ClassVar[bool] = True
    _plain_store: ClassVar[bool] = True
    _checks_valid: ClassVar[bool] = False
    _pk_view: ClassVar[type[Entity] | None] = None
    #: A numeric `id` of a processed record is stored as its text (a GraphQL ID is a string, whatever
    #: number a server or a REST member sends). A flag, not a `process` override, so such a class keeps
    #: the fast engines: they hand a numeric id to `normalize_value`, which applies it after `process`.
    _text_id: ClassVar[bool] = False

    def __init_subclass__(cls, _pk_view: bool = False, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if _pk_view:  # the private view `compute_pk` reads through: no setup of its own
            return
        if "key" not in cls.__dict__:
            cls.key = cls.__name__
        _check_definition(cls)
        defaults: dict[str, object] = {}
        for klass in reversed(cls.__mro__):
            for name, annotation in inspect.get_annotations(klass).items():
                if name.startswith("_") or _is_classvar(annotation):
                    continue
                defaults[name] = getattr(cls, name, None)
        cls._defaults = defaults
        cls._mutable_defaults = tuple(n for n, v in defaults.items() if isinstance(v, _MUTABLE))
        cls._truthy_defaults = frozenset(n for n, v in defaults.items() if v)
        cls._plain_pk = cls.pk is Entity.pk
        cls._plain_build = all(  # built by the default steps (the fast engine inlines them)
            getattr(cls, name).__func__ is getattr(Entity, name).__func__
            for name in ("from_json", "start_build", "finish_build")
        )
        cls._plain_store = all(
            getattr(cls, name).__func__ is getattr(Entity, name).__func__
            for name in ("merge", "merge_with_store", "merge_meta_with_store", "should_update", "should_reorder")
        )
        cls._checks_valid = cls.validate.__func__ is not Entity.validate.__func__  # type: ignore[attr-defined]
        cls._nested_for = None
        cls._pk_view = None

    # ----- instances -------------------------------------------------------------------
    def __init__(self, **fields: object) -> None:
        self._check_names(fields)
        object.__setattr__(self, "__dict__", self.field_values(fields))

    @classmethod
    def _check_names(cls, fields: Mapping[str, object], known: Mapping[str, object] | None = None) -> None:
        """A keyword that is not a field (a typo such as `titel=`) is a TypeError, as for a dataclass."""
        for name in fields:
            if name not in cls._defaults and (known is None or name not in known):
                raise ParamError(f"{cls.__name__}() got an unexpected keyword argument {name!r}")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        if other is self:
            return True
        pairs: set[tuple[int, int]] | None = getattr(_comparing, "pairs", None)
        if pairs is None:
            pairs = _comparing.pairs = set()
        pair = (id(self), id(other))
        if pair in pairs:  # a cycle came back to a pair still being compared: it decides nothing
            return True
        pairs.add(pair)
        try:
            return self.__dict__ == other.__dict__
        finally:
            pairs.discard(pair)

    def __hash__(self) -> int:
        try:
            return hash((self.__class__, self.__dict__.get("id")))
        except TypeError:
            return hash(self.__class__)

    @reprlib.recursive_repr()
    def __repr__(self) -> str:  # an entity met again inside itself (cyclic data) shows as "..."
        body = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({body})"

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Self:
        return self

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (nested entities converted too); cyclic data raises RestLayerError."""
        return {k: _plain(v, (id(self),)) for k, v in self.__dict__.items()}

    if TYPE_CHECKING:

        @property
        def replace(self) -> type[Self]:
            """Typing only: `replace` takes the constructor's keywords (the fields, each optional as it has
            a default), so a checker catches `replace(titel=...)` or a wrong value type as it does for
            `Todo(...)`; the call returns the same type. At run time it is the method below."""
            ...

    else:

        def replace(self, **changes: object) -> Self:
            """A copy with some fields changed (the instance itself never changes)."""
            self._check_names(changes, self.__dict__)
            obj = object.__new__(type(self))
            object.__setattr__(obj, "__dict__", {**self.__dict__, **changes})
            return obj

    def pk(self, parent: object = None, key: str | None = None, args: tuple[object, ...] = ()) -> str | None:
        """The primary key as text; default: the `id` field (`None` when absent)."""
        value = self.__dict__.get("id")
        return None if value is None else to_text(value)

    # ----- class-level hooks --------------------------------------------------------------
    @classmethod
    def process(
        cls, input: Mapping[str, object], parent: object, key: str | None, args: tuple[object, ...]
    ) -> Mapping[str, object] | None:
        """Shape raw input before storage; default: a shallow copy. `None` deletes the entity."""
        return dict(input)

    @classmethod
    def merge(cls, existing: Mapping[str, object], incoming: Mapping[str, object]) -> Mapping[str, object]:
        """Combine two versions of a record; default: incoming fields win."""
        return {**existing, **incoming}

    @classmethod
    def should_update(
        cls, existing_meta: Meta, incoming_meta: Meta, existing: object, incoming: Mapping[str, object]
    ) -> bool:
        """Whether incoming data may change the stored record at all."""
        return True

    @classmethod
    def should_reorder(
        cls, existing_meta: Meta, incoming_meta: Meta, existing: object, incoming: Mapping[str, object]
    ) -> bool:
        """True when incoming data is older than the stored record, so stored fields win."""
        return bool(incoming_meta["fetched_at"] < existing_meta["fetched_at"])

    @classmethod
    def merge_with_store(
        cls, existing_meta: Meta, incoming_meta: Meta, existing: object, incoming: Mapping[str, object]
    ) -> object:
        """The record to store when `existing` is already in the store."""
        if not cls.should_update(existing_meta, incoming_meta, existing, incoming):
            return existing
        if not isinstance(existing, Mapping):  # the deletion marker, stamped with the delete's start
            # Only a request started after the delete may bring the entity back: a slower
            # reply to an earlier request (a PATCH the DELETE overtook) describes the past.
            return existing if incoming_meta["fetched_at"] < existing_meta["fetched_at"] else incoming
        if cls.should_reorder(existing_meta, incoming_meta, existing, incoming):
            return cls.merge(incoming, existing)
        return cls.merge(existing, incoming)

    @classmethod
    def merge_meta_with_store(
        cls, existing_meta: Meta, incoming_meta: Meta, existing: object, incoming: Mapping[str, object]
    ) -> Meta:
        """The meta to store alongside `merge_with_store`'s record."""
        if cls.should_reorder(existing_meta, incoming_meta, existing, incoming):
            return existing_meta
        return incoming_meta

    @classmethod
    def validate(cls, processed: Mapping[str, object]) -> str | None:
        """A message when `processed` is not a valid record of this class; default: always valid."""
        return None

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Self:
        """Build an instance: field defaults, then every member of `data`."""
        obj = object.__new__(cls)
        object.__setattr__(obj, "__dict__", cls.field_values(data))
        return obj

    @classmethod
    def field_values(cls, data: Mapping[str, object]) -> dict[str, object]:
        """Field defaults overlaid with `data`; a mutable default left out is copied, never shared."""
        values = dict(cls._defaults)
        values.update(data)
        for name in cls._mutable_defaults:
            if name not in data:
                values[name] = copy.deepcopy(values[name])
        return values

    # ----- schema machinery -----------------------------------------------------------------
    @classmethod
    def nested(cls) -> dict[str, Node | None]:
        """The compiled nested schemas by field name: from entity-typed annotations and `schema`.

        Read on first use, so annotations may name classes defined later in the
        module; recompiled if `schema` is reassigned.
        """
        if cls._nested_for is not cls.schema:
            _check_nested(cls)
            members = {**annotated_schemas(cls, Entity), **cls.schema}  # `schema` wins over an annotation
            cls._nested = {name: compile_schema(s) for name, s in members.items()}
            cls._nested_for = cls.schema
        return cls._nested

    @classmethod
    def start_build(cls, record: Mapping[str, object]) -> Self | InvalidType | None:
        """First step of building an instance from a stored `record` (see `finish_build`).

        `INVALID` when `validate` refuses the record; else an empty instance to fill,
        or None when the class overrides a build step (`from_json` then builds the
        instance from the finished values).
        An empty instance lets a reader hand it out before its members are read
        (cycles, deep data).
        """
        if cls._checks_valid and call_hook(cls, "validate", record, reading=record):
            return INVALID
        return object.__new__(cls) if cls._plain_build else None

    @classmethod
    def finish_build(
        cls, obj: Self | None, record: Mapping[str, object], unvisit: Unvisit, strict: bool = True
    ) -> Self | InvalidType:
        """Fill `obj` from `start_build` (or call `from_json`): defaults, stored members, nested schemas read.

        A nested entity that is missing or deleted reads None; with `strict`, one whose
        field has a truthy default makes the whole instance `INVALID` instead.
        """
        values = dict(cls._defaults)  # `field_values`, inlined: this runs once per entity read
        values.update(record)
        for name in cls._mutable_defaults:
            if name not in record:  # a copy of its own, read-only: the instance is shared by every reader
                values[name] = freeze(copy.deepcopy(values[name]))
        for field, node in cls.nested().items():
            child = record.get(field)
            if child is None or node is None:
                continue
            value = node.denormalize_value(child, unvisit)
            if value is INVALID:
                if strict and field in cls._truthy_defaults:
                    return INVALID
                value = None
            values[field] = value
        if obj is None:
            return cls._built_by_from_json(values)
        object.__setattr__(obj, "__dict__", values)
        return obj

    @classmethod
    def _built_by_from_json(cls, values: Mapping[str, object]) -> Self:
        """The instance an overridden `from_json` builds from the finished `values`.

        Anything else it returns (a dict, None) would be handed out as the entity, where every reader
        and the read's type say an instance: a SchemaError naming the hook and the record instead.
        """
        built = call_hook(cls, "from_json", values, reading=values)
        if not isinstance(built, cls):
            raise SchemaError(
                f"{cls.__name__}.from_json returned {type(built).__name__}, not a {cls.__name__} instance "
                f"(reading {cls.key} {values.get('id')!r})",
                schema=cls.key,
            )
        return built

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The names of the class's fields (its annotated attributes with defaults), in declaration order."""
        return tuple(cls._defaults)

    @classmethod
    def has_entities(cls) -> bool:
        """An entity is stored in the entity tables: reads of it always denormalize."""
        return True

    @classmethod
    def deletes_entities(cls) -> bool:
        """Normalizing an entity stores it; only `Invalidate` deletes."""
        return False

    @classmethod
    def compute_pk(
        cls, processed: Mapping[str, object], parent: object, key: str | None, args: tuple[object, ...]
    ) -> str | None:
        """The pk of processed data, or None when unusable (no fallback to field defaults)."""
        if cls._plain_pk:
            value: object = processed.get("id")
        else:
            probe = object.__new__(cls._pk_view or _make_pk_view(cls))
            object.__setattr__(probe, "__dict__", dict(processed))
            try:
                value = call_hook(probe, "pk", parent, key, args)
            except SchemaError as exc:
                if isinstance(exc.__cause__, AttributeError):  # pk() read a field the response does not have
                    return None
                raise
        return usable_pk(None if value is None else cls._pk_text(value))

    @classmethod
    def _pk_text(cls, value: object) -> str:
        """`value` as pk text; a container (dict, list, set...) names no record: SchemaError naming the entity.

        Its text would be its repr (`"{'a': 1}"`), a key no reply or read ever names again.
        """
        if isinstance(value, _PK_CONTAINERS):
            raise SchemaError(
                f"{cls.key} primary key must be text or a number, found {type(value).__name__}", schema=cls.key
            )
        return to_text(value)

    @classmethod
    def normalize_value(cls, value: object, parent: object, key: str | None, ctx: Normalizer) -> object:
        """Store `value` (and its nested entities) and return its pk."""
        if not isinstance(value, (dict, Mapping)):  # dict first: no ABC check
            if isinstance(value, (list, tuple)):
                raise SchemaError(f"Expected a single object for entity {cls.key}, found a list", schema=cls.key)
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                return to_text(value) if value else value  # an id given directly
            if value is None or isinstance(value, bool):
                return value
            # Stored as is, any other object (an entity instance, say) named no record: reads dropped it.
            hint = " (an entity instance: pass its fields, e.g. to_dict())" if isinstance(value, Entity) else ""
            raise SchemaError(
                f"Expected an object or a primary key for entity {cls.key}, found {type(value).__name__}{hint}",
                schema=cls.key,
            )
        args = ctx.args
        processed = call_hook(cls, "process", value, parent, key, args)
        if processed is None:
            pk = cls.compute_pk(value, parent, key, args)
            if pk is None:
                raise SchemaError("Missing usable primary key", schema=cls.key)
            ctx.invalidate(cls.key, pk)
            return pk
        if processed is value or processed.__class__ is not dict:
            if not isinstance(processed, Mapping):
                raise SchemaError(
                    f"{cls.__name__}.process returned {type(processed).__name__}: expected a dict (or None to delete)",
                    schema=cls.key,
                )
            processed = dict(processed)  # never write into (or store) the caller's object
        if cls._text_id:
            processed = _with_text_id(processed)
        pk = cls.compute_pk(processed, parent, key, args)
        if pk is None:
            if not ctx.creating:
                raise SchemaError(f"Missing usable primary key for {cls.key}", schema=cls.key)
            if not ctx.placeholders:
                raise SchemaError(
                    f"Missing usable primary key for {cls.key}: the reply to a create must name the created item",
                    schema=cls.key,
                )
            pk = ctx.placeholder()
        message = call_hook(cls, "validate", processed)
        if message:
            raise SchemaError(f"{cls.key} is invalid: {message}", schema=cls.key)
        nested = cls.nested()
        if nested:
            if ctx.depth >= MAX_DEPTH:  # deep data: finished later, from a fresh stack
                ctx.defer(cls, pk, processed, nested, value)
                return pk
            ctx.depth += 1
            normalize_members(processed, nested, processed, ctx)
            ctx.depth -= 1
        if not _CONTAINERS.isdisjoint(map(type, processed.values())):
            freeze_members(processed)  # stored data is read-only: callers never alias it
        ctx.store(cls, pk, processed)
        return pk

    @classmethod
    def denormalize_value(cls, value: object, unvisit: Unvisit) -> object:  # a pk, or an unnormalized record
        """The instance for pk `value` (None when missing, INVALID when deleted or invalid)."""
        if type(value) is str:  # the usual case: a pk (checked first, no ABC check)
            return unvisit.entity(cls, value)
        if isinstance(value, Mapping):  # an entity that was never normalized
            return unvisit.build(cls, value)
        return unvisit.entity(cls, to_text(value))

    @classmethod
    def query_key(cls, args: tuple[object, ...], unvisit: Unvisit) -> object:
        """The pk named by the first argument (by `id`, pk() or an indexed field), if stored."""
        if not args or args[0] is None:
            return None
        first = args[0]
        if not isinstance(first, Mapping):
            pk: str | None = to_text(first)
        else:
            try:
                pk = cls.compute_pk(first, None, None, args)
            except SchemaError as exc:
                if exc.__cause__ is not None:  # pk() itself raised: the error, not a silent "not found"
                    raise
                pk = None  # a container pk names no stored record: a read finds none
            if pk is None:
                pk = unvisit.lookup_index(cls, first)
        # Only a stored record (or the deletion marker) answers; a missing one is "not found".
        if pk is None or unvisit.read(cls.key, pk) is None:
            return None
        return pk


# Every public name of the Entity machinery: a field by one of these names would shadow it.
_MACHINERY = frozenset(n for n in vars(Entity) if not n.startswith("_"))


def _check_definition(cls: type[Entity]) -> None:
    """Refuse a class whose fields collide with the machinery (TypeError naming the field)."""
    for name, annotation in inspect.get_annotations(cls).items():
        if name in _MACHINERY and not _is_classvar(annotation):
            hint = (
                f"set it without an annotation (`{name} = ...`)"
                if name in _SETTINGS
                else "rename the field (and map it in process())"
            )
            raise DefinitionError(f"{cls.__name__}: field {name!r} collides with Entity.{name}; {hint}")
    for name in _MACHINERY.difference(_SETTINGS):
        if name in cls.__dict__ and not callable(getattr(cls, name)):
            raise DefinitionError(f"{cls.__name__}: {name!r} is an Entity method and cannot be set to a value")
    if not isinstance(cls.key, str) or not cls.key:
        raise DefinitionError(f"{cls.__name__}: key must be a non-empty string, got {cls.key!r}")
    if "schema" in cls.__dict__:
        _check_nested(cls)


def _check_nested(cls: type[Entity]) -> None:
    """`schema` is a dict of field name -> schema; a `None` member (a shadowed class name?) is refused."""
    if not isinstance(cls.schema, Mapping):
        raise DefinitionError(f"{cls.__name__}.schema must be a dict of field name -> schema")
    for name, member in cls.schema.items():
        if member is None:
            raise DefinitionError(
                f"{cls.__name__}.schema[{name!r}] is None: expected a schema "
                "(is a field or variable shadowing the class name?)"
            )


class _PkField:
    """A field seen by `pk()` during normalization: present in the response data or missing."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Entity | None, owner: object = None) -> object:
        if obj is None:
            return self
        try:
            return obj.__dict__[self.name]
        except KeyError:
            raise AttributeError(f"the response has no {self.name!r}") from None


def _make_pk_view(cls: type[Entity]) -> type[Entity]:
    """A subclass whose fields read the processed data only (no class-level defaults)."""
    namespace: dict[str, object] = {name: _PkField(name) for name in cls._defaults}
    namespace["key"] = cls.key
    namespace["__qualname__"] = cls.__qualname__
    make_class: Callable[..., type[Entity]] = type(cls)  # the class's own metaclass
    view = make_class(cls.__name__, (cls,), namespace, _pk_view=True)
    cls._pk_view = view
    return view


def _plain(value: object, path: tuple[int, ...] = ()) -> object:
    """Plain-data form of a denormalized value (`path`: ids of the entities it lies in)."""
    if isinstance(value, Entity):
        if id(value) in path:
            raise RestLayerError(
                f"{value.__class__.__name__} {value.__dict__.get('id')!r} contains itself (cyclic data): "
                "it has no plain form; read it through a schema without the cycle"
            )
        inner = (*path, id(value))
        return {k: _plain(v, inner) for k, v in value.__dict__.items()}
    if isinstance(value, list):
        return [_plain(v, path) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v, path) for k, v in value.items()}
    return value


def to_plain(value: object) -> Any:  # plain JSON data the caller reads into
    """Convert denormalized data (entities, lists, dicts) to plain dicts and lists; cyclic data raises."""
    return _plain(value)


__all__ = ["INVALID", "Entity", "to_plain"]
