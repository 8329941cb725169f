"""The REST layer: `RestEndpoint`, `resource()` and the shared httpx client."""

from restlayer.errors import NetworkError
from restlayer.rest._client import aclose, client_session, configure_client, get_client
from restlayer.rest._retry import Retry
from restlayer.rest.endpoint import ByteStream, RestEndpoint
from restlayer.rest.resource import ExtendedResource, Resource, resource

__all__ = [
    "ByteStream",
    "ExtendedResource",
    "NetworkError",
    "Resource",
    "RestEndpoint",
    "Retry",
    "aclose",
    "client_session",
    "configure_client",
    "get_client",
    "resource",
]
