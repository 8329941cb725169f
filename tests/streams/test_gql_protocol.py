"""GraphQL subscriptions against a scripted graphql-transport-ws server: every protocol turn and failure."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any, Protocol

import pytest

from examples.todo_api import LocalServer
from restlayer import (
    BodyTooLargeError,
    ClosedError,
    Controller,
    Entity,
    NetworkError,
    ParamError,
    RestLayerError,
    StatusError,
    TransportError,
)
from restlayer.graphql import GQLEndpoint, GQLEvents, GQLNetworkError, GQLSubscription
from restlayer.graphql._subscription import reopens
from restlayer.streams import Backoff
from restlayer.streams._stream import MIN_RECONNECT_WAIT
from tests.streams._script import GQL_CONNECTS, GQL_HANDSHAKES, GQL_SCRIPTS, GQL_SUBPROTOCOLS

QUERY = "subscription { todoChanged { id title } }"


class Todo(Entity):
    id: int = 0
    title: str = ""


def nxt(payload: object) -> str:
    return json.dumps({"id": "1", "type": "next", "payload": payload})


Received = list[dict[str, Any]]


class Scripted(Protocol):
    def __call__(
        self, frames: list[str], *, backoff: Backoff | None = None, retries: int | None = 5, **options: Any
    ) -> tuple[GQLSubscription, Received]: ...


@pytest.fixture
def scripted(script_server: LocalServer) -> Iterator[Scripted]:
    """`scripted(frames)`: a subscription to a server playing `frames`, and what that server received."""
    keys: list[str] = []

    def make(
        frames: list[str], *, backoff: Backoff | None = None, retries: int | None = 5, **options: Any
    ) -> tuple[GQLSubscription, Received]:
        key = uuid.uuid4().hex
        keys.append(key)
        received: Received = []
        GQL_SCRIPTS[key] = (frames, received)
        gql = GQLEndpoint(f"{script_server.url}/graphql")
        ws = script_server.url.replace("http://", "ws://") + f"/_stream/gql?key={key}"
        sub = gql.subscription(QUERY, {"todoChanged": Todo}, ws_url=ws, backoff=backoff, retries=retries, **options)
        return sub, received

    yield make
    for key in keys:
        GQL_SCRIPTS.pop(key, None)
        GQL_CONNECTS.pop(key, None)
        GQL_HANDSHAKES.pop(key, None)
        GQL_SUBPROTOCOLS.pop(key, None)


class Delays:
    """A backoff sleep recording each wait (and yielding to the loop once)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


def recorded(delays: Delays) -> Backoff:
    """Waits of 0.1, 0.2, 0.4... s (no jitter), recorded instead of slept."""
    return Backoff(initial=0.1, factor=2, jitter=0, sleep=delays)


def titles_of(frames: list[dict[str, Any]]) -> list[str]:
    return [f["type"] for f in frames]


async def test_ping_is_answered_and_a_server_complete_ends_the_iteration(scripted: Scripted) -> None:
    sub, received = scripted(
        [
            json.dumps({"type": "ping"}),
            nxt({"data": {"todoChanged": {"id": 1, "title": "a"}}}),
            json.dumps({"id": "1", "type": "complete"}),
        ]
    )
    ctrl = Controller()
    seen = [data["todoChanged"].title async for data in sub.events(ctrl)]
    assert seen == ["a"]
    assert received[0] == {"type": "connection_init", "payload": {}}
    assert received[1]["type"] == "subscribe" and received[1]["payload"]["query"] == QUERY
    assert {"type": "pong"} in received
    assert ctrl.get(Todo, {"id": 1}) == Todo(id=1, title="a")
    assert "GQLSubscription(name=" in repr(sub)


async def test_a_ping_or_pong_before_the_acknowledgement_is_no_protocol_error(scripted: Scripted) -> None:
    """graphql-transport-ws allows ping and pong at any time: the client answers and waits on for the ack."""
    sub, received = scripted(
        [
            "PREACK:" + json.dumps({"type": "ping"}),
            "PREACK:" + json.dumps({"type": "pong"}),
            nxt({"data": {"todoChanged": {"id": 4, "title": "acked"}}}),
            json.dumps({"id": "1", "type": "complete"}),
        ]
    )
    ctrl = Controller()
    seen = [data["todoChanged"].title async for data in sub.events(ctrl)]
    assert seen == ["acked"]
    assert titles_of(received)[:3] == ["connection_init", "pong", "subscribe"]


async def test_a_server_that_never_acknowledges_is_given_up_after_the_open_timeout(scripted: Scripted) -> None:
    """No `connection_ack` within `open_timeout`: the connection counts as lost (not a wait forever)."""
    delays = Delays()
    sub, received = scripted(["NOACK", "DROP", "NOACK"], backoff=recorded(delays), retries=1)
    sub.open_timeout = 0.2
    events = sub.events(Controller())
    with pytest.raises(TransportError, match=r"gave up after 1 reconnects: .*no connection_ack within 0.2s"):
        async with events:
            await asyncio.wait_for(anext(aiter(events)), timeout=10)
    assert events.connects == 2 and delays.delays == [0.1]
    assert titles_of(received) == ["connection_init", "connection_init"]


async def test_without_a_controller_the_data_is_yielded_as_sent(scripted: Scripted) -> None:
    sub, _ = scripted([nxt({"data": {"todoChanged": {"id": 2, "title": "raw"}}})])
    async with sub.events() as events:
        async for data in events:
            assert data == {"todoChanged": {"id": 2, "title": "raw"}}
            break


async def test_leaving_early_sends_complete(scripted: Scripted, script_server: LocalServer) -> None:
    sub, received = scripted([nxt({"data": {"todoChanged": {"id": 3, "title": "x"}}})])
    async with sub.events(Controller()) as events:
        async for _ in events:
            break
    # the server thread records the frame when it reads it: wait (bounded) for that
    for _ in range(500):
        if received and received[-1] == {"id": "1", "type": "complete"}:
            break
        await asyncio.sleep(0.01)
    assert received[-1] == {"id": "1", "type": "complete"}


@pytest.mark.parametrize(
    ("frames", "error", "match"),
    [
        ([nxt({"data": None, "errors": [{"message": "resolver broke"}]})], GQLNetworkError, "resolver broke"),
        ([json.dumps({"id": "1", "type": "error", "payload": [{"message": "bad query"}]})], GQLNetworkError, "bad"),
        ([nxt("not an object")], GQLNetworkError, "no payload object"),
        ([nxt({"data": None})], GQLNetworkError, "has no data"),
        (["{not json"], NetworkError, "not JSON"),
        (['{"type": ' + "[" * 100_000 + "]" * 100_000 + "}"], NetworkError, "not JSON"),  # nested too deeply
        (["[1, 2]"], NetworkError, "not a JSON object"),
        (["CLOSE"], NetworkError, "subscription socket failed"),
        ([nxt({"data": {"todoChanged": {"title": "no id"}}})], RestLayerError, "Error processing"),
    ],
)
async def test_protocol_failures_raise_restlayer_errors(
    scripted: Scripted, frames: list[str], error: type[Exception], match: str
) -> None:
    sub, _ = scripted(frames)
    with pytest.raises(error, match=match):
        async with sub.events(Controller()) as events:
            async for _ in events:
                pass


def test_a_non_http_url_is_used_as_the_websocket_url() -> None:
    assert GQLEndpoint("ws://host/graphql").subscription(QUERY).ws_url == "ws://host/graphql"


# -- the controller closing ---------------------------------------------------------------


def others() -> set[asyncio.Task[Any]]:
    """The tasks running besides the test's own."""
    return {task for task in asyncio.all_tasks() if task is not asyncio.current_task()}


async def complete_received(received: Received) -> bool:
    """Whether the server reads `complete` (it records frames in its own thread: a bounded wait)."""
    for _ in range(500):
        if {"id": "1", "type": "complete"} in received:
            return True
        await asyncio.sleep(0.01)
    return False


async def test_closing_the_controller_ends_the_subscription_and_closes_its_socket(scripted: Scripted) -> None:
    sub, received = scripted([nxt({"data": {"todoChanged": {"id": 5, "title": "before close"}}})])
    ctrl = Controller()
    events = sub.events(ctrl)
    stream = aiter(events)
    assert (await anext(stream))["todoChanged"].title == "before close"
    waiting = asyncio.ensure_future(anext(stream))  # waits for an event the server never sends
    await asyncio.sleep(0)  # let it reach the socket
    ctrl.close()
    with pytest.raises(ClosedError):
        await asyncio.wait_for(waiting, 10)
    # ended without leaving `events`: the operation completed, the socket closed (its keepalive task too)
    assert await complete_received(received)
    assert others() == set()
    with pytest.raises(StopAsyncIteration):  # ended for good
        await anext(stream)
    await events.aclose()


async def test_a_subscription_of_a_closed_controller_opens_no_socket(
    scripted: Scripted, script_server: LocalServer
) -> None:
    sub, received = scripted([nxt({"data": {"todoChanged": {"id": 6, "title": "never"}}})])
    ctrl = Controller()
    ctrl.close()
    with pytest.raises(ClosedError):
        async with sub.events(ctrl) as events:
            async for _ in events:
                pass
    assert received == []
    assert ctrl.get(Todo, {"id": 6}) is None


async def test_closing_the_controller_stops_the_wait_to_reconnect(scripted: Scripted) -> None:
    waiting = asyncio.Event()

    async def never(seconds: float) -> None:
        waiting.set()
        await asyncio.get_running_loop().create_future()  # a backoff that only a close interrupts

    sub, received = scripted(["DROP", nxt({"data": {"todoChanged": {"id": 7, "title": "never"}}})])
    sub.backoff = Backoff(sleep=never)
    ctrl = Controller()
    events = sub.events(ctrl)
    consuming = asyncio.ensure_future(anext(aiter(events)))
    await asyncio.wait_for(waiting.wait(), 10)
    ctrl.close()
    with pytest.raises(ClosedError):
        await asyncio.wait_for(consuming, 10)
    assert events.connects == 1
    assert titles_of(received) == ["connection_init", "subscribe"]
    assert others() == set()
    await events.aclose()


async def _titles_into(seen: list[str], first: asyncio.Event, events: GQLEvents[Any]) -> None:
    """Iterate `events`, appending each changed todo's title to `seen`; `first` is set on the first one."""
    async for data in events:
        seen.append(data["todoChanged"].title)
        first.set()


async def test_leaving_the_block_while_another_task_iterates_ends_that_iteration(scripted: Scripted) -> None:
    sub, received = scripted([nxt({"data": {"todoChanged": {"id": 8, "title": "first"}}})])
    seen: list[str] = []
    first = asyncio.Event()

    async with sub.events(Controller()) as events:
        consuming = asyncio.ensure_future(_titles_into(seen, first, events))
        await asyncio.wait_for(first.wait(), 10)
        await asyncio.sleep(0)  # the consumer waits for the next event again
    # the block's end stopped the subscription for the task iterating: its loop ended normally
    await asyncio.wait_for(consuming, 10)
    assert seen == ["first"]
    assert await complete_received(received)
    assert others() == set()


@pytest.mark.parametrize("iterated", [True, False])
async def test_events_iterated_after_aclose_raise_closed_error(scripted: Scripted, iterated: bool) -> None:
    """Closed events are no empty subscription: iterating them again raised nothing and yielded nothing."""
    sub, _ = scripted([nxt({"data": {"todoChanged": {"id": 9, "title": "once"}}})])
    events = sub.events(Controller())
    if iterated:
        async for data in events:
            assert data["todoChanged"].title == "once"
            break
    await events.aclose()
    with pytest.raises(ClosedError, match=r"events were closed .* open a new `events\(\)`"):
        async for _ in events:
            pytest.fail("closed events yielded an event")
    await events.aclose()  # closing again stays harmless


async def test_a_loop_whose_body_closes_the_events_ends_normally(scripted: Scripted) -> None:
    """Only a loop begun after the close is refused: one under way that closes its events just ends."""
    sub, received = scripted([nxt({"data": {"todoChanged": {"id": 9, "title": "last"}}})])
    events = sub.events(Controller())
    seen: list[str] = []
    async for data in events:
        seen.append(data["todoChanged"].title)
        await events.aclose()
    assert seen == ["last"] and await complete_received(received)


@pytest.mark.parametrize("iterating", [False, True])
async def test_events_closed_by_two_tasks_at_once_close_once_for_both(scripted: Scripted, iterating: bool) -> None:
    """Two owners closing the same events at once: the second got a bare RuntimeError (the generator was
    closing already); both now return once the socket is closed, the operation completed."""
    sub, received = scripted([nxt({"data": {"todoChanged": {"id": 8, "title": "first"}}})])
    seen: list[str] = []
    first = asyncio.Event()
    events = sub.events(Controller())
    consuming = None
    if iterating:  # another task waits in `async for`: the close wakes it
        consuming = asyncio.ensure_future(_titles_into(seen, first, events))
        await asyncio.wait_for(first.wait(), 10)
        await asyncio.sleep(0)  # the consumer waits for the next event again
    else:  # the generator is parked at its `yield`
        seen.append((await asyncio.wait_for(anext(aiter(events)), 10))["todoChanged"].title)
    assert list(await asyncio.gather(events.aclose(), events.aclose())) == [None, None]
    assert await complete_received(received)
    if consuming is not None:
        await asyncio.wait_for(consuming, 10)  # ended normally by the close
    assert seen == ["first"] and others() == set()


async def test_a_second_task_iterating_the_same_events_gets_a_restlayer_error(scripted: Scripted) -> None:
    sub, _ = scripted([nxt({"data": {"todoChanged": {"id": 8, "title": "first"}}})])
    seen: list[str] = []
    first = asyncio.Event()

    async with sub.events(Controller()) as events:
        consuming = asyncio.ensure_future(_titles_into(seen, first, events))
        await asyncio.wait_for(first.wait(), 10)
        await asyncio.sleep(0)  # the consumer waits for the next event again
        with pytest.raises(RestLayerError, match="another task"):
            await anext(aiter(events))
    await asyncio.wait_for(consuming, 10)  # undisturbed: ended by the block's end
    assert seen == ["first"]


# -- reconnecting ------------------------------------------------------------------------


async def test_a_dropped_connection_is_reopened_after_the_backoff_and_delivery_resumes(scripted: Scripted) -> None:
    delays = Delays()
    sub, received = scripted(
        [
            nxt({"data": {"todoChanged": {"id": 1, "title": "a"}}}),
            "DROP",  # 1012: the server restarts
            "DROP:1001",  # going away, before any event: the count goes on
            nxt({"data": {"todoChanged": {"id": 1, "title": "b"}}}),
            "DROP:1000",  # a normal close without `complete`: the operation is not over
            json.dumps({"id": "1", "type": "complete"}),
        ],
        backoff=recorded(delays),
    )
    ctrl = Controller()
    events = sub.events(ctrl)
    async with events:
        seen = [data["todoChanged"].title async for data in events]
    assert seen == ["a", "b"]
    assert events.connects == 4
    assert delays.delays == [0.1, 0.2, 0.1]  # an event delivered starts the count again
    assert titles_of(received) == ["connection_init", "subscribe"] * 4
    assert received[1] == received[3] == received[5] == received[7]  # the same operation each time
    assert ctrl.get(Todo, {"id": 1}) == Todo(id=1, title="b")


@pytest.mark.parametrize("chosen", ["graphql-ws", None])
async def test_a_server_not_speaking_graphql_transport_ws_ends_the_subscription_at_once(
    scripted: Scripted, chosen: str | None
) -> None:
    """A server choosing another subprotocol, or none, speaks another protocol: a reconnect meeting one is no
    lost connection to retry (another subprotocol was), nor is the first connect one to go on with (none was)."""
    delays = Delays()
    sub, received = scripted(
        [nxt({"data": {"todoChanged": {"id": 1, "title": "a"}}}), "DROP", nxt({"data": {"todoChanged": {"id": 1}}})],
        backoff=recorded(delays),
    )
    GQL_SUBPROTOCOLS[sub.ws_url.rpartition("key=")[2]] = ["graphql-transport-ws", chosen]
    seen: list[str] = []
    with pytest.raises(RestLayerError, match=r"does not speak graphql-transport-ws .* not reconnecting") as raised:
        async with sub.events(Controller()) as events:
            for _ in range(3):  # bounded: one event, then the end
                seen.append((await asyncio.wait_for(anext(aiter(events)), timeout=10))["todoChanged"].title)
    assert not isinstance(raised.value, TransportError)  # not a lost connection
    assert seen == ["a"] and events.connects == 1 and delays.delays == [0.1]  # one reconnect tried, no more
    assert titles_of(received) == ["connection_init", "subscribe"]  # nothing sent to the other server

    first, first_received = scripted([nxt({"data": {"todoChanged": {"id": 2, "title": "b"}}})])
    GQL_SUBPROTOCOLS[first.ws_url.rpartition("key=")[2]] = [chosen]
    with pytest.raises(RestLayerError, match="does not speak graphql-transport-ws") as raised:
        async with first.events(Controller()) as events:
            await asyncio.wait_for(anext(aiter(events)), timeout=10)
    assert not isinstance(raised.value, TransportError) and first_received == []


async def test_a_backoff_of_no_wait_still_waits_the_least_reconnect_wait(scripted: Scripted) -> None:
    """`Backoff(initial=0)` (or `cap=0`) must not reconnect in a tight loop to a server that drops each connection:
    a subscription waits at least the floor streams wait."""
    delays = Delays()
    sub, _ = scripted(
        [
            "DROP",
            nxt({"data": {"todoChanged": {"id": 1, "title": "back"}}}),
            json.dumps({"id": "1", "type": "complete"}),
        ],
        backoff=Backoff(initial=0, jitter=0, sleep=delays),
        retries=None,
    )
    events = sub.events(Controller())
    async with events:
        seen = [data["todoChanged"].title async for data in events]
    assert seen == ["back"]
    assert delays.delays == [MIN_RECONNECT_WAIT]


@pytest.mark.parametrize("code", [1011, 4500])
async def test_a_close_refusing_the_operation_raises_instead_of_reconnecting(scripted: Scripted, code: int) -> None:
    delays = Delays()
    sub, _ = scripted(
        [f"DROP:{code}", nxt({"data": {"todoChanged": {"id": 1, "title": "never"}}})], backoff=recorded(delays)
    )
    events = sub.events(Controller())
    with pytest.raises(TransportError, match=f"subscription socket failed: received {code}"):
        async with events:
            async for _ in events:
                pass
    assert (events.connects, delays.delays) == (1, [])


@pytest.mark.parametrize(
    ("code", "status"), [(1008, 403), (4400, 400), (4401, 401), (4403, 403), (4409, 409), (4429, 429)]
)
async def test_a_close_refusing_the_client_raises_status_error_with_its_http_status(
    scripted: Scripted, code: int, status: int
) -> None:
    """4401 unauthorized, 4403 forbidden...: the server answered, refusing; the caller can tell why (re-authenticate),
    as for a handshake refused with that status, not a transport failure with status 500."""
    delays = Delays()
    sub, _ = scripted(
        [f"DROP:{code}", nxt({"data": {"todoChanged": {"id": 1, "title": "never"}}})], backoff=recorded(delays)
    )
    events = sub.events(Controller())
    with pytest.raises(StatusError, match=f"subscription socket failed: received {code}") as info:
        async with events:
            async for _ in events:
                pass
    assert info.value.status == status
    assert (events.connects, delays.delays) == (1, [])


async def test_reconnects_that_deliver_nothing_give_up_after_the_retries(scripted: Scripted) -> None:
    delays = Delays()
    sub, _ = scripted(["DROP"] * 5, backoff=recorded(delays), retries=2)
    events = sub.events(Controller())
    with pytest.raises(TransportError, match=r"gave up after 2 reconnects: .* subscription socket lost") as caught:
        async with events:
            async for _ in events:
                pass
    assert isinstance(caught.value.__cause__, TransportError)
    assert events.connects == 3
    assert delays.delays == [0.1, 0.2]


async def test_headers_go_with_each_handshake_and_connection_params_with_each_connection_init(
    scripted: Scripted,
) -> None:
    """How a client says who it is: a header on the handshake, a token in `connection_init` (fresh per connection)."""
    tokens = iter(["first", "second"])

    async def params() -> dict[str, object]:
        return {"authToken": next(tokens)}

    delays = Delays()
    sub, received = scripted(
        [nxt({"data": {"todoChanged": {"id": 1, "title": "a"}}}), "DROP", json.dumps({"id": "1", "type": "complete"})],
        backoff=recorded(delays),
        headers={"Authorization": "Bearer abc"},
        connection_params=params,
    )
    key = sub.ws_url.rpartition("key=")[2]
    async with sub.events(Controller()) as events:
        seen = [data["todoChanged"].title async for data in events]
    assert seen == ["a"] and events.connects == 2
    assert [hs["authorization"] for hs in GQL_HANDSHAKES[key]] == ["Bearer abc"] * 2
    inits = [frame for frame in received if frame["type"] == "connection_init"]
    assert [frame["payload"] for frame in inits] == [{"authToken": "first"}, {"authToken": "second"}]


async def test_a_mapping_of_connection_params_and_the_open_timeout_are_subscription_options(
    scripted: Scripted,
) -> None:
    sub, received = scripted(["NOACK"], open_timeout=0.2, retries=0, connection_params={"token": "t"})
    assert sub.open_timeout == 0.2
    with pytest.raises(TransportError, match=r"no connection_ack within 0\.2s"):
        async with sub.events(Controller()) as events:
            async for _ in events:
                pass
    assert received == [{"type": "connection_init", "payload": {"token": "t"}}]


async def test_connection_params_a_function_gives_wrong_are_a_param_error_before_anything_is_sent(
    scripted: Scripted,
) -> None:
    sub, received = scripted([], connection_params=lambda: ["not", "a", "mapping"])
    with pytest.raises(ParamError, match="connection_params must be a mapping"):
        async with sub.events(Controller()) as events:
            async for _ in events:
                pass
    assert received == []


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_connection_params_a_function_that_raises_ends_the_subscription_with_a_restlayer_error(
    scripted: Scripted, asynchronous: bool
) -> None:
    """A token the function cannot get: its error is the cause of a RestLayerError, not raised as it is."""

    def token() -> dict[str, object]:
        raise KeyError("token")

    async def token_later() -> dict[str, object]:
        return token()

    sub, received = scripted([], connection_params=token_later if asynchronous else token)
    with pytest.raises(RestLayerError, match="connection_params raised KeyError: 'token'") as info:
        async with sub.events(Controller()) as events:
            async for _ in events:
                pass
    assert isinstance(info.value.__cause__, KeyError)
    assert received == [] and events.connects == 1


async def test_an_event_over_max_size_ends_the_subscription_and_a_larger_max_size_takes_it(scripted: Scripted) -> None:
    """A new connection would be sent that event again: BodyTooLargeError at once, not reconnects that give up."""
    big = "x" * (1 << 20)
    frames = [nxt({"data": {"todoChanged": {"id": 1, "title": big}}}), json.dumps({"id": "1", "type": "complete"})]
    delays = Delays()
    sub, _ = scripted(frames, backoff=recorded(delays))
    with pytest.raises(BodyTooLargeError, match=r"max_size=1048576 bytes") as info:
        async with sub.events(Controller()) as events:
            async for _ in events:
                pass
    assert isinstance(info.value, RestLayerError)
    assert (events.connects, delays.delays) == (1, [])
    roomy, _ = scripted(frames, max_size=None)
    async with roomy.events(Controller()) as events:
        assert [data["todoChanged"].title async for data in events] == [big]


async def test_a_server_closing_with_1009_refuses_the_client_and_is_not_taken_for_an_event_over_max_size(
    scripted: Scripted,
) -> None:
    """1009 from the server: a message of this client's was too big for it. The client echoes the code, but its
    own max_size is not at fault (raising it mends nothing): StatusError 413, as a WebSocketStream ends with."""
    sub, _ = scripted(["DROP:1009"], backoff=recorded(Delays()))
    with pytest.raises(StatusError, match="received 1009") as info:
        async with sub.events(Controller()) as events:
            async for _ in events:
                pass
    assert not isinstance(info.value, BodyTooLargeError)
    assert info.value.status == 413


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"headers": {"X-Token": 1}}, "headers map names to values"),
        ({"headers": ["Authorization"]}, "headers must map names"),
        ({"headers": {"Authorization": "Bearer é"}}, "header 'Authorization' value is not ASCII"),
        ({"headers": {"X-A": "a\r\nX-B: b"}}, "header 'X-A' value contains a line break"),
        ({"connection_params": "token"}, "connection_params must be a mapping"),
        ({"connection_params": {"when": object()}}, "connection_params cannot be sent as JSON"),
        ({"connection_params": {"ttl": float("inf")}}, "connection_params cannot be sent as JSON"),  # not `Infinity`
        ({"open_timeout": -1}, "open_timeout must be a number"),
        ({"max_size": 0}, "max_size must be a number of bytes"),
    ],
)
def test_bad_authentication_options_raise_param_error(options: dict[str, Any], match: str) -> None:
    gql = GQLEndpoint("http://127.0.0.1:9/graphql")
    with pytest.raises(ParamError, match=match):
        gql.subscription(QUERY, **options)


@pytest.mark.parametrize("name", ["sec-websocket-protocol", "Host", "Upgrade", "Sec-WebSocket-Key", "connection"])
def test_a_header_of_the_handshake_itself_is_a_param_error(name: str) -> None:
    """The library writes them: given too, the handshake carried the header twice and the server refused it."""
    gql = GQLEndpoint("http://127.0.0.1:9/graphql")
    with pytest.raises(ParamError, match=f"subscription headers: '{name}' is the WebSocket handshake's own"):
        gql.subscription(QUERY, headers={name: "x"})


def test_bad_reconnect_options_raise_param_error() -> None:
    gql = GQLEndpoint("http://127.0.0.1:9/graphql")
    with pytest.raises(ParamError, match="retries must be a count"):
        gql.subscription(QUERY, retries=-1)
    with pytest.raises(ParamError, match="retries must be a count"):
        gql.subscription(QUERY, retries=True)
    with pytest.raises(ParamError, match=r"backoff must be a restlayer\.streams\.Backoff"):
        gql.subscription(QUERY, backoff=0.5)  # type: ignore[call-overload]
    with pytest.raises(ParamError, match=r"backoff must be a restlayer\.streams\.Backoff, not the class"):
        gql.subscription(QUERY, backoff=Backoff)  # type: ignore[call-overload]  # an AttributeError at a reconnect


@pytest.mark.parametrize(
    ("where", "ws_url"),
    [
        ("http://127.0.0.1:9/graphql", 5),
        ("http://127.0.0.1:9/graphql", "http://127.0.0.1:9/graphql"),
        ("http://127.0.0.1:9/graphql", "not a url"),
        ("http://127.0.0.1:9/graphql", "ws:///graphql"),
        ("http://127.0.0.1:9/graphql", "ws://[::1/graphql"),
        ("http://127.0.0.1:9/graphql", "ws://127.0.0.1:99999/graphql"),  # no port: every connect would fail
        ("http://127.0.0.1:9/graphql", "ws://127.0.0.1:abc/graphql"),
        ("ftp://127.0.0.1:9/graphql", None),  # no WebSocket address follows from it
    ],
)
def test_a_ws_url_no_socket_can_open_is_a_param_error_when_defined(where: str, ws_url: object) -> None:
    """Else the first connect failed as a soft transport error (status 500), or with a bare AttributeError."""
    gql = GQLEndpoint(where)
    with pytest.raises(ParamError, match=r"subscription ws_url must be a ws:// or wss:// address"):
        gql.subscription(QUERY, ws_url=ws_url)  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("code", "reopened"),
    [
        (None, True),  # no close frame at all: the TCP connection dropped (1006)
        (1006, True),
        (1012, True),
        (1013, True),
        (4000, True),  # an application's own code: not a refusal the protocol defines
        (4408, True),  # connection_init timeout: a new connection may be quicker
        (1002, False),
        (1011, False),
        (4401, False),
        (4404, False),  # 4000 + an HTTP client error: refused, as a WebSocketStream is
        (4500, False),
    ],
)
def test_which_closes_are_reopened(code: int | None, reopened: bool) -> None:
    assert reopens(code) is reopened
