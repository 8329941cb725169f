"""The error classes as a Python user handles them: pickled (process pools, task queues) and copied."""

from __future__ import annotations

import copy
import pickle
from collections.abc import AsyncIterator

import pytest

from examples.todo_api import LocalServer
from restlayer import Controller
from restlayer.errors import (
    DeadlineExceededError,
    GQLNetworkError,
    ParamError,
    ProcessingError,
    RedirectError,
    RestLayerError,
    StatusError,
)
from restlayer.rest import RestEndpoint, aclose


@pytest.fixture(autouse=True)
async def _close_shared_client() -> AsyncIterator[None]:
    yield
    await aclose()


async def test_a_fetched_status_error_survives_pickle_and_deepcopy(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/status/:code", url_prefix=api.url)
    async with Controller() as ctrl:
        with pytest.raises(StatusError) as info:
            await ctrl.fetch(ep, code=422)
    for twin in (pickle.loads(pickle.dumps(info.value)), copy.deepcopy(info.value)):
        assert type(twin) is StatusError
        assert str(twin) == str(info.value) and twin.status == 422
        assert twin.response is not None and twin.response.json() == {"message": "status 422"}


@pytest.mark.parametrize(
    "error",
    [
        RedirectError("moved", status=302, location="http://x.test/b"),
        GQLNetworkError([{"message": "bad thing"}], data={"a": 1}),
        ProcessingError("Error processing GET /a: no pk", schema="Todo", path=("a", 1)),
        DeadlineExceededError("too slow", status=500),
        ParamError("Missing parameters: id"),
        RestLayerError("plain", status=409),
    ],
    ids=lambda error: type(error).__name__,
)
def test_every_error_class_pickles_with_its_attributes(error: RestLayerError) -> None:
    twin = pickle.loads(pickle.dumps(error))
    assert type(twin) is type(error)
    assert (str(twin), twin.args, twin.status) == (str(error), error.args, error.status)
    assert vars(twin) == vars(error)
