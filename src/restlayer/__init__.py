"""restlayer: declarative REST and GraphQL resources with a normalized, self-updating cache."""

from restlayer.errors import NetworkError, ParamError, ResetError, RestLayerError, SchemaError

__all__ = ["NetworkError", "ParamError", "ResetError", "RestLayerError", "SchemaError"]
__version__ = "0.1.0"
