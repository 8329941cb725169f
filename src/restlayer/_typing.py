"""Typing helpers shared by the modules: type parameters (with PEP 696 defaults) and markers.

Type checkers read the `typing_extensions` names. At run time the defaults matter
too (`RestEndpoint[Todo]` fills in the parameter types it leaves out), so the
type parameters come from `typing` on 3.13+ and from `typing_extensions` before.
`dataclass_transform` is a no-op on 3.10, and `Self` only appears in annotations.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING or sys.version_info < (3, 13):
    from typing_extensions import ParamSpec, TypeVar
else:
    from typing import ParamSpec, TypeVar

if TYPE_CHECKING:
    from typing_extensions import Self, dataclass_transform

    from restlayer.schema import Entity
else:
    try:
        from typing import Self, dataclass_transform
    except ImportError:  # Python 3.10: annotations only, never evaluated
        from typing_extensions import Self, dataclass_transform


# A bare generic (`RestEndpoint`, `Resource`, `Schema`) means "of Any".
T = TypeVar("T", default=Any)
T_co = TypeVar("T_co", covariant=True, default=Any)

#: An Entity subclass given as a schema (`schema=Todo` reads a `Todo`).
E = TypeVar("E", bound="Entity")

#: The `TypedDict` of an endpoint's URL parameters, and of its body (`params=`, `body=`).
P = TypeVar("P", default=object)  # always solved where used: the default only orders them
B = TypeVar("B", default=object)

#: What an endpoint's URL takes: `[TodoParams]` when declared with `params=`, else anything (`...`).
Params = ParamSpec("Params", default=...)
#: What a call of an endpoint takes after it (`ctrl.fetch(ep, *args)`); defaults to `Params`.
Args = ParamSpec("Args", default=Params)
#: The call arguments of an endpoint handed to a Controller method.
A = ParamSpec("A", default=...)

#: Methods whose calls take a body after the params, unless `body=None` (`params=` without `body=`: typed `object`).
BodyMethod = Literal["POST", "PUT", "PATCH"]
#: Methods whose calls never take a body (RestEndpoint sends none for them).
NoBodyMethod = Literal["GET", "DELETE"]

__all__ = [
    "A",
    "Args",
    "B",
    "BodyMethod",
    "E",
    "NoBodyMethod",
    "P",
    "Params",
    "Self",
    "T",
    "T_co",
    "dataclass_transform",
]
