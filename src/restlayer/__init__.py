"""restlayer: declarative REST and GraphQL resources with a normalized, self-updating cache.

The public surface is re-exported here; the machinery lives in private modules
of four packages: `restlayer.schema` (the schema engine), `restlayer.rest`
(endpoints and resources), `restlayer.core` (the store and Controller) and
`restlayer.graphql`.
"""

from restlayer.core import (
    DLE,
    Controller,
    ExpiryStatus,
    GCPolicy,
    Manager,
    NetworkManager,
    Response,
    SubscriptionManager,
)
from restlayer.errors import (
    AbortOptimistic,
    BodyTooLargeError,
    DeadlineExceededError,
    DecodeError,
    EmptyBodyError,
    NetworkError,
    ParamError,
    PathTemplateWarning,
    ProcessingError,
    RedirectError,
    ResetError,
    RestLayerError,
    SchemaError,
)
from restlayer.rest import Resource, RestEndpoint, aclose, client_session, configure_client, resource
from restlayer.schema import (
    INVALID,
    All,
    Array,
    Collection,
    Entity,
    Invalidate,
    MemoCache,
    NormalizedResult,
    Object,
    Query,
    Union,
    Values,
    denormalize,
    normalize,
    to_plain,
)

__all__ = [
    "DLE",
    "INVALID",
    "Controller",
    "ExpiryStatus",
    "GCPolicy",
    "Manager",
    "NetworkManager",
    "Response",
    "SubscriptionManager",
    "AbortOptimistic",
    "BodyTooLargeError",
    "DeadlineExceededError",
    "DecodeError",
    "EmptyBodyError",
    "PathTemplateWarning",
    "RedirectError",
    "All",
    "Array",
    "Collection",
    "Entity",
    "Invalidate",
    "MemoCache",
    "NetworkError",
    "NormalizedResult",
    "Object",
    "ParamError",
    "ProcessingError",
    "Query",
    "ResetError",
    "Resource",
    "RestEndpoint",
    "RestLayerError",
    "SchemaError",
    "Union",
    "Values",
    "aclose",
    "client_session",
    "configure_client",
    "denormalize",
    "normalize",
    "resource",
    "to_plain",
]
__version__ = "0.1.0"
