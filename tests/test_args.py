"""The one place call arguments are merged and split (`restlayer._args`), and who uses it."""

from __future__ import annotations

import pytest

from restlayer._args import merge_keywords, split_call
from restlayer.errors import ParamError
from restlayer.graphql import GQLEndpoint
from restlayer.rest import RestEndpoint


def test_keywords_merge_into_the_first_argument_without_changing_it() -> None:
    params = {"a": 1}
    assert merge_keywords((params, "body"), {"b": 2}) == ({"a": 1, "b": 2}, "body")
    assert params == {"a": 1}
    assert merge_keywords((None,), {"b": 2}) == ({"b": 2},)
    assert merge_keywords((), {"b": 2}) == ({"b": 2},)
    args = ({"a": 1},)
    assert merge_keywords(args, {}) is args


def test_keywords_beside_a_non_dict_first_argument_raise_param_error() -> None:
    with pytest.raises(ParamError, match="first argument is a int"):
        merge_keywords((5,), {"b": 2})
    with pytest.raises(ParamError, match="first argument is a str"):
        RestEndpoint(path="/todos/:id").bind("x", "body", id=1)


def test_split_with_a_body_takes_the_last_argument_as_body() -> None:
    assert split_call(({"id": 1}, {"title": "x"}), True) == ({"id": 1}, {"title": "x"})
    assert split_call(({"title": "x"},), True) == ({}, {"title": "x"})
    assert split_call((None, b"raw"), True) == ({}, b"raw")
    assert split_call((), True) == ({}, None)


def test_split_without_a_body_reads_params_only() -> None:
    assert split_call(({"id": 1},), False) == ({"id": 1}, None)
    assert split_call((None,), False) == ({}, None)
    assert split_call((), False) == ({}, None)


def test_rest_endpoint_keys_and_binds_through_the_shared_split() -> None:
    create = RestEndpoint(path="/todos/:group", method="POST", url_prefix="http://h")
    assert create.bind({"title": "x"}, group=2) == ({"group": 2}, {"title": "x"})
    assert create.key({"group": 2}, {"title": "x"}) == "POST http://h/todos/2"
    read = RestEndpoint(path="/todos/:id", url_prefix="http://h")
    assert read.bind(None, id=1) == ({"id": 1},)
    assert read.key({"id": 1}) == "GET http://h/todos/1"


def test_gql_endpoint_overrides_hooks_instead_of_copying_the_call() -> None:
    """GQLEndpoint reuses RestEndpoint's `__call__` and `bind`; only the split and the request differ."""
    own = vars(GQLEndpoint)
    assert "__call__" not in own and "bind" not in own
    assert "_split" in own and "get_request_init" in own
    ep = GQLEndpoint("http://h/graphql").query("query { a }")
    assert ep.bind({"x": 1}, y=2) == ({"x": 1, "y": 2},)
    assert ep.key() == "query { a } {}"
    assert ep.key({"x": 1}) == 'query { a } {"x":1}'
