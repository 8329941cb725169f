"""`resource()`: the CRUD endpoints of one path template and one schema.

A `Resource` is a small immutable object holding named endpoints (`get`,
`get_list`, `update`, `partial_update`, `delete`, plus whatever `extend` adds).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, Protocol, overload

from restlayer._sentinel import Sentinel
from restlayer._typing import Args, E, P, Params, Self, T, T_co
from restlayer.errors import ParamError
from restlayer.rest._path import list_path
from restlayer.rest.endpoint import RestEndpoint
from restlayer.schema import NonFilter, Schema
from restlayer.schema._base import required_node

if TYPE_CHECKING:
    from typing_extensions import TypedDict

__all__ = ["ExtendedResource", "Resource", "resource"]


#: `extend()` called without a positional argument (None is an argument, and a wrong one).
_NOTHING: Final = Sentinel("NOTHING")

#: The members whose result type `Resource[T]` states (`extend(name, schema=...)` of one of them changes it).
_StandardMember = Literal["get", "get_list", "update", "partial_update", "delete"]

if TYPE_CHECKING:

    class _SameResult(TypedDict, total=False):
        """Typing only: member options of `extend(get={...})` that keep the resource's result and params types.

        Every endpoint option but `schema` and `params`: a dict naming either (or an option a
        subclass adds) changes what the member reads or takes, so that `extend` is typed
        `ExtendedResource[Any]`, never the old (then wrong) type.
        """

        path: object
        url_prefix: object
        method: object
        body: object
        search_params: object
        pagination_field: object
        content: object
        request_init: object
        side_effect: object
        data_expiry_length: object
        error_expiry_length: object
        error_policy: object
        invalid_if_stale: object
        poll_frequency: object
        get_optimistic_response: object
        update: object
        name: object
        client: object
        process: object
        url: object
        search_to_string: object
        key: object
        test_key: object
        get_request_init: object
        get_headers: object
        fetch_response: object
        parse_response: object
        move_path: object
        remove_cursor: object
        max_body_size: object
        total_timeout: object
        retry: object


class Resource(Generic[T_co, Params, Args]):
    """Named endpoints, read as attributes (`r.get`) or by name (`r["get"]`); immutable.

    Iterating gives the member names; `members()` the name -> endpoint mapping.
    `Resource[Todo]` types the standard members (`get` reads a `Todo`,
    `get_list` a `list[Todo]`); members added by `extend` are read by name.
    `resource(..., params=TodoParams)` gives a `Resource[Todo, [TodoParams], [TodoParams, object]]`:
    the item members (`get`, `update`, `partial_update`, `delete`) take a `TodoParams`.
    """

    __slots__ = ("_label", "_members")

    _members: dict[str, RestEndpoint[object, ...]]
    _label: str

    def __init__(self, members: Mapping[str, RestEndpoint[object, ...]], label: str = "") -> None:
        object.__setattr__(self, "_members", dict(members))
        object.__setattr__(self, "_label", label)

    if TYPE_CHECKING:  # the standard members, typed; at run time __getattr__ serves every member

        @property
        def get(self) -> RestEndpoint[T_co, Params]:
            """GET one item."""
            ...

        @property
        def get_list(self) -> RestEndpoint[list[T_co]]:
            """GET the list (a Collection): `.push`, `.unshift`, `.remove`, `.move`, `.get_page`."""
            ...

        @property
        def update(self) -> RestEndpoint[T_co, Params, Args]:
            """PUT one item."""
            ...

        @property
        def partial_update(self) -> RestEndpoint[T_co, Params, Args]:
            """PATCH one item."""
            ...

        @property
        def delete(self) -> RestEndpoint[Any, Params]:
            """DELETE one item; the Controller returns the reply (or params) naming what was deleted."""
            ...

    else:

        def __getattr__(self, name: str) -> RestEndpoint[object, ...]:
            if name.startswith("__"):
                raise AttributeError(name)
            try:
                return self._members[name]
            except KeyError:
                raise AttributeError(f"resource {self._label or '?'} has no member {name!r}") from None

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Resource is immutable: use extend() to derive a new one")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Resource is immutable: use extend() to derive a new one")

    @overload
    def __getitem__(self, name: Literal["get"]) -> RestEndpoint[T_co, Params]: ...  # type: ignore[overload-overlap]
    @overload
    def __getitem__(self, name: Literal["get_list"]) -> RestEndpoint[list[T_co]]: ...
    @overload
    def __getitem__(self, name: Literal["update", "partial_update"]) -> RestEndpoint[T_co, Params, Args]: ...  # type: ignore[overload-overlap]
    @overload
    def __getitem__(self, name: Literal["delete"]) -> RestEndpoint[Any, Params]: ...  # type: ignore[overload-overlap]
    @overload
    def __getitem__(self, name: str) -> RestEndpoint[Any]: ...
    def __getitem__(self, name: str) -> RestEndpoint[object, ...]:
        """The member `name`: the standard ones typed like their attributes, any other of unknown result type."""
        return self._members[name]

    def __contains__(self, name: object) -> bool:
        return name in self._members

    def __iter__(self) -> Iterator[str]:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self._members})

    def __repr__(self) -> str:
        return f"Resource({self._label}: {', '.join(self._members)})"

    def members(self) -> dict[str, RestEndpoint[object, ...]]:
        """A copy of the name -> endpoint mapping."""
        return dict(self._members)

    @overload
    def extend(
        self, members: Callable[[Self], Mapping[str, RestEndpoint[Any, ...]]], /
    ) -> ExtendedResource[T_co, Params, Args]: ...
    # A standard member given a new schema or params (or options a checker cannot read) reads or takes
    # something else than `Resource[T]` states: typed `ExtendedResource[Any]`, never the old, wrong, type.
    @overload
    def extend(self, name: _StandardMember, /, *, schema: object, **options: object) -> ExtendedResource[Any]: ...
    @overload
    def extend(self, name: _StandardMember, /, *, params: object, **options: object) -> ExtendedResource[Any]: ...
    @overload
    def extend(self, name: str, /, **options: object) -> ExtendedResource[T_co, Params, Args]: ...
    @overload
    def extend(  # type: ignore[overload-overlap]
        self, members: Mapping[str, _SameResult] = ..., /, **overrides: _SameResult
    ) -> ExtendedResource[T_co, Params, Args]: ...
    @overload
    def extend(
        self, members: Mapping[str, Mapping[str, object]] = ..., /, **overrides: Mapping[str, object]
    ) -> ExtendedResource[Any]: ...
    def extend(
        self, first: object = _NOTHING, /, *more: object, **overrides: object
    ) -> ExtendedResource[T_co, Params, Args]:
        """A new resource with members added or changed; this one is unchanged.

        `extend(lambda base: {name: endpoint})`, `extend(get={...options})`, or
        `extend("name", **options)` (changes that member, or adds one built from `get`).
        """
        args = () if first is _NOTHING else (first, *more)
        if args and isinstance(args[0], str):
            if len(args) > 1:
                raise ParamError("extend(name, **options): options go as keywords")
            return self._with({args[0]: self._extended_member(args[0], overrides)})
        if args and callable(args[0]):
            if len(args) > 1 or overrides:
                raise ParamError("extend(function) takes no other arguments")
            added = args[0](self)
            if not isinstance(added, Mapping):
                raise ParamError("extend(function): the function must return a dict of members")
            return self._with(added)
        if args:
            if len(args) > 1 or not isinstance(args[0], Mapping):
                raise ParamError("extend() takes a function, a name and options, or member options")
            overrides = {**args[0], **overrides}
        return self._with({name: self._member_override(name, opts) for name, opts in overrides.items()})

    def _member_override(self, name: str, options: object) -> RestEndpoint[object, ...]:
        """Form (b): an existing member with its options changed."""
        if name not in self._members:
            raise ParamError(f"resource has no member {name!r} to extend; add one with extend({name!r}, **options)")
        if not isinstance(options, Mapping):
            raise ParamError(f"extend({name}=...) takes a dict of endpoint options")
        return self._members[name].extend(**options)

    def _extended_member(self, name: str, options: dict[str, object]) -> RestEndpoint[object, ...]:
        """Form (c): change member `name`, or derive a new one from `get`."""
        if name in self._members:
            return self._members[name].extend(**options)
        if self._label and "name" not in options:
            options = {**options, "name": f"{self._label}.{name}"}
        return self._members["get"].extend(**options)

    def _with(self, members: Mapping[str, RestEndpoint[object, ...]]) -> ExtendedResource[T_co, Params, Args]:
        for name, member in members.items():
            _check_member_name(name)
            _check_member(name, member)
        return ExtendedResource({**self._members, **members}, self._label)


def _check_member(name: str, member: object) -> None:
    """`ParamError` for a member that is no endpoint (`extend(lambda base: {"x": 5})`): else it is
    accepted here and fails only when fetched, far from the mistake."""
    if not (callable(member) and callable(getattr(member, "bind", None)) and callable(getattr(member, "key", None))):
        raise ParamError(f"extend: member {name!r} must be an endpoint (e.g. base.get.extend(...)), not {member!r}")


def _check_member_name(name: object) -> None:
    """`ParamError` for a member name that is not a str (no attribute could read it), or one a
    Resource attribute already holds (`members`, `extend`...): read as an attribute it would be
    that attribute, never the member."""
    if not isinstance(name, str):
        raise ParamError(f"extend: member names must be str, not {name!r}")
    if hasattr(Resource, name):
        raise ParamError(
            f"extend: {name!r} is an attribute of Resource, so the member could not be read as one; choose another name"
        )


if TYPE_CHECKING:

    class ExtendedResource(Resource[T_co, Params, Args]):
        """What `extend` returns: the standard members typed, any other name an endpoint of `Any`.

        Python cannot add attributes to a type, so a member added by `extend` reads as
        `RestEndpoint[Any]` (annotate or `cast` it for a precise type); only the
        resource straight from `resource()` turns a misspelt member into an error.
        """

        def __getattr__(self, name: str) -> RestEndpoint[Any]: ...

else:
    ExtendedResource = Resource  # one class at run time


def _schema_label(schema: object) -> str:
    """The prefix of member names: the schema class name (`Todo.get`)."""
    return str(getattr(schema, "__name__", None) or getattr(schema, "name", None) or type(schema).__name__)


def _delete_process(value: object, *args: object) -> object:
    """A delete's result: the reply when it names the entity, else the URL params."""
    if isinstance(value, (dict, str)) and value:
        return value
    return (args[0] if args else None) or {}


def _as_dict(value: object) -> dict[object, object]:
    """A body or stored entity as a plain dict (for optimistic responses)."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return dict(to_dict())
    return {}


def _optimistic_update(snapshot: object, params: object = None, body: object = None, *rest: object) -> object:
    """Expected reply of a create or update: the params overlaid with the body."""
    return {**_as_dict(params), **_as_dict(body)}


class _StoreView(Protocol):
    """What an optimistic response reads (the snapshot the Controller passes)."""

    abort: BaseException

    def get(self, schema: object, *args: object) -> object: ...


def _optimistic_partial(schema: object) -> Callable[..., object]:
    """Expected reply of a partial update: params, the stored entity, then the body."""

    def get_optimistic_response(
        snapshot: _StoreView, params: object = None, body: object = None, *rest: object
    ) -> object:
        stored = snapshot.get(schema, params)
        if not stored:
            raise snapshot.abort
        return {**_as_dict(params), **_as_dict(stored), **_as_dict(body)}

    return get_optimistic_response


def _optimistic_delete(snapshot: object, params: object = None, *rest: object) -> object:
    """Expected reply of a delete: the params naming the entity."""
    return params


@overload
def resource(
    *,
    path: str,
    schema: type[E],
    params: type[P],
    endpoint_class: type[RestEndpoint[object, ...]] = ...,
    collection_class: type | None = ...,
    non_filter_argument_keys: NonFilter | None = ...,
    optimistic: bool = ...,
    pagination_field: str | None = ...,
    **options: object,
) -> Resource[E, [P], [P, object]]: ...
@overload
def resource(
    *,
    path: str,
    schema: Schema[T],
    params: type[P],
    endpoint_class: type[RestEndpoint[object, ...]] = ...,
    collection_class: type | None = ...,
    non_filter_argument_keys: NonFilter | None = ...,
    optimistic: bool = ...,
    pagination_field: str | None = ...,
    **options: object,
) -> Resource[T, [P], [P, object]]: ...
@overload
def resource(
    *,
    path: str,
    schema: type[E],
    endpoint_class: type[RestEndpoint[object, ...]] = ...,
    collection_class: type | None = ...,
    non_filter_argument_keys: NonFilter | None = ...,
    optimistic: bool = ...,
    pagination_field: str | None = ...,
    **options: object,
) -> Resource[E]: ...
@overload
def resource(
    *,
    path: str,
    schema: Schema[T],
    endpoint_class: type[RestEndpoint[object, ...]] = ...,
    collection_class: type | None = ...,
    non_filter_argument_keys: NonFilter | None = ...,
    optimistic: bool = ...,
    pagination_field: str | None = ...,
    **options: object,
) -> Resource[T]: ...
def resource(
    *,
    path: str,
    schema: object,
    endpoint_class: type[RestEndpoint[object, ...]] = RestEndpoint,
    collection_class: type | None = None,
    non_filter_argument_keys: NonFilter | None = None,
    optimistic: bool = False,
    pagination_field: str | None = None,
    params: object = None,
    **options: object,
) -> Resource[object, ..., ...]:
    """The CRUD endpoints of `path` and `schema`; other options go to every member.

    `params` (a `TypedDict`) types the parameters of the item members, which share `path`.
    """
    required_node(schema, "resource")  # DefinitionError for no schema: every member is built from it
    if collection_class is None:
        from restlayer.schema import Collection

        collection_class = Collection
    if options.get("body", 0) is None:
        del options["body"]  # `body` only types the body argument; must not remove it
    label = _schema_label(schema)
    short_path = list_path(path)
    mutate = dict(options)
    partial = dict(options)
    if optimistic:
        mutate["get_optimistic_response"] = _optimistic_update
        partial["get_optimistic_response"] = _optimistic_partial(schema)
    collection_options = (
        {} if non_filter_argument_keys is None else {"non_filter_argument_keys": non_filter_argument_keys}
    )
    list_options: dict[str, object] = {
        **mutate,
        "move_path": path,
        "path": short_path,
        "schema": collection_class([schema], **collection_options),
        "name": f"{label}.get_list",
    }
    if pagination_field is not None:
        list_options["pagination_field"] = pagination_field
    delete_options: dict[str, object] = {
        **mutate,
        "path": path,
        "schema": _invalidate(schema),
        "method": "DELETE",
        "name": f"{label}.delete",
        "process": _delete_process,
    }
    if optimistic:
        delete_options["get_optimistic_response"] = _optimistic_delete
    if params is not None:  # the item members only: get_list has the shorter path
        options["params"] = mutate["params"] = partial["params"] = delete_options["params"] = params
    build: Callable[..., RestEndpoint[object, ...]] = endpoint_class
    members = {
        "get": build(**{**options, "path": path, "schema": schema, "name": f"{label}.get"}),
        "get_list": build(**list_options),
        "update": build(**{**mutate, "path": path, "schema": schema, "method": "PUT", "name": f"{label}.update"}),
        "partial_update": build(
            **{
                **partial,
                "path": path,
                "schema": schema,
                "method": "PATCH",
                "name": f"{label}.partial_update",
            }
        ),
        "delete": build(**delete_options),
    }
    return Resource(members, label)


def _invalidate(schema: object) -> object:
    """`Invalidate(schema)` for an Entity class or a Union (what `delete` removes); other schemas unchanged."""
    from restlayer.schema import Entity, Invalidate, Union

    if isinstance(schema, type) and issubclass(schema, Entity):
        return Invalidate(schema)
    if isinstance(schema, Union):
        return Invalidate(schema)
    return schema
