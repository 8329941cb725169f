"""The headers of a WebSocket handshake that the `websockets` library writes itself.

Given again in a stream's or subscription's `headers`, they would be sent twice (the
library does not replace them) and the server would refuse the handshake, at every
reconnect; so they are refused when the stream or subscription is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from restlayer.errors import ParamError

__all__ = ["check_handshake_headers"]

#: Lower-case names of the handshake's own headers (RFC 6455 section 4.1, and the offered extensions).
HANDSHAKE_HEADERS: Final = frozenset(
    {
        "host",
        "upgrade",
        "connection",
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-extensions",
        "sec-websocket-protocol",
    }
)


def check_handshake_headers(headers: Mapping[str, str], what: str, protocol_option: str | None = None) -> None:
    """ParamError when `headers` name one of the handshake's own (in any spelling).

    `protocol_option` names the option that offers subprotocols instead, for the message.
    """
    for name in headers:
        lowered = name.lower()
        if lowered not in HANDSHAKE_HEADERS:
            continue
        instead = f"; offer subprotocols with {protocol_option}" if protocol_option and "protocol" in lowered else ""
        raise ParamError(
            f"{what}: {name!r} is the WebSocket handshake's own header, written by the library "
            f"(given too, it would be sent twice and the handshake refused){instead}"
        )
