"""Embedded example JSON + GraphQL API used by the demo, the docs and the test suite.

It mimics jsonplaceholder (users, todos, comments with camelCase fields) on top of
a small sqlite database, and records every request so tests can assert what a
client actually sent.
"""

from examples.todo_api.app import RecordedRequest, RequestLog, create_app
from examples.todo_api.db import TodoDB
from examples.todo_api.server import LocalServer

__all__ = ["LocalServer", "RecordedRequest", "RequestLog", "TodoDB", "create_app"]
