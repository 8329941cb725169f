"""The store and controller: one normalized store every call reads and writes, plus its managers."""

from restlayer.core._patch import Patch
from restlayer.core._state import State
from restlayer.core.controller import Controller
from restlayer.core.endpoint import Endpoint
from restlayer.core.expiry import DLE, ExpiryStatus, Response
from restlayer.core.gc import GCPolicy
from restlayer.core.manager import Manager
from restlayer.core.network import NetworkManager
from restlayer.core.shared import SharedManager, SharedStore, Snapshot, Write
from restlayer.core.subscriptions import SubscriptionManager

__all__ = [
    "DLE",
    "Controller",
    "Endpoint",
    "ExpiryStatus",
    "GCPolicy",
    "Manager",
    "NetworkManager",
    "Patch",
    "Response",
    "State",
    "SharedManager",
    "SharedStore",
    "Snapshot",
    "SubscriptionManager",
    "Write",
]
