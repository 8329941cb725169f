"""The schema engine: declare shapes, normalize responses into tables, denormalize them back."""

from restlayer.schema._base import INVALID, Schema, SchemaLike
from restlayer.schema._collection import Collection, NonFilter, find_collection, replace_collection
from restlayer.schema._containers import Array, Object, Values
from restlayer.schema._denormalize import denormalize
from restlayer.schema._entity import Entity, to_plain
from restlayer.schema._invalidate import Invalidate
from restlayer.schema._memo import Denormalized, MemoCache
from restlayer.schema._normalize import NormalizedResult, normalize
from restlayer.schema._query import All, Query
from restlayer.schema._union import Union

__all__ = [
    "INVALID",
    "All",
    "Array",
    "Collection",
    "Denormalized",
    "Entity",
    "Invalidate",
    "MemoCache",
    "NonFilter",
    "NormalizedResult",
    "Object",
    "Query",
    "Schema",
    "SchemaLike",
    "Union",
    "Values",
    "denormalize",
    "find_collection",
    "normalize",
    "replace_collection",
    "to_plain",
]
