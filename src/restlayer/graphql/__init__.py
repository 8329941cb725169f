"""GraphQL endpoints: `GQLEndpoint(url).query(...)` / `.mutation(...)`, `GQLEntity`, `GQLNetworkError`.

Their endpoints follow the same protocol as `RestEndpoint`, so they work with the
Controller and can be mixed into a `resource()` with `extend`.
"""

from restlayer.graphql._endpoint import GQLEndpoint, QueryText, clean_query
from restlayer.graphql._entity import GQLEntity
from restlayer.graphql._errors import GQLNetworkError
from restlayer.graphql._subscription import GQLEvents, GQLSubscription, ReconnectBackoff

__all__ = [
    "GQLEndpoint",
    "GQLEntity",
    "GQLEvents",
    "GQLNetworkError",
    "GQLSubscription",
    "QueryText",
    "ReconnectBackoff",
    "clean_query",
]
