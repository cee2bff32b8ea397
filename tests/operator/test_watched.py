"""What the operator watches but never writes, read from the watch instead of a GET each time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jmsbridge_operator.watched import Watched

from bridge_job.kube.api import LEASES, Resource


def lease(name: str, holder: str, labelled: bool = True) -> dict[str, Any]:
    labels = {"jmsbridge.dev/bridge-id": name} if labelled else {}
    return {"metadata": {"name": name, "labels": labels}, "spec": {"holderIdentity": holder}}


class Server:
    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.gets = 0
        self.during_get: Any = None  # something that happens while a GET is under way

    def get(self, resource: Resource, namespace: str, name: str) -> Mapping[str, Any] | None:
        self.gets += 1
        found = self.objects.get(name)
        if self.during_get is not None:
            self.during_get()
        return found


def test_what_the_watch_saw_is_read_without_asking_and_a_miss_is_fetched_once() -> None:
    server = Server()
    watched = Watched(server.get)
    watched.seen(LEASES, "ADDED", "apps", lease("a", "primary"))
    assert watched.get(LEASES, "apps", "a") == lease("a", "primary") and server.gets == 0
    server.objects["b"] = lease("b", "secondary")
    assert watched.get(LEASES, "apps", "b") == lease("b", "secondary")
    assert watched.get(LEASES, "apps", "b") is not None and server.gets == 1
    watched.seen(LEASES, "DELETED", "apps", lease("b", "secondary"))
    del server.objects["b"]
    assert watched.get(LEASES, "apps", "b") is None and server.gets == 2


def test_what_no_watch_would_update_is_fetched_every_time() -> None:
    server = Server()
    server.objects["old"] = lease("old", "primary", labelled=False)  # a Lease of an older job
    watched = Watched(server.get)
    selected = lambda obj: bool(obj["metadata"]["labels"])  # noqa: E731
    for _ in range(2):
        assert watched.get(LEASES, "apps", "old", watched=selected) is not None
    assert server.gets == 2


def test_a_deletion_seen_during_a_fetch_is_not_undone() -> None:
    server = Server()
    server.objects["a"] = lease("a", "primary")
    watched = Watched(server.get)
    server.during_get = lambda: watched.seen(LEASES, "DELETED", "apps", lease("a", "primary"))
    assert watched.get(LEASES, "apps", "a") is not None  # what the GET said, this once
    server.during_get = None
    del server.objects["a"]
    assert watched.get(LEASES, "apps", "a") is None  # not kept: the deletion came after the GET began


def versioned(name: str, version: int, uid: str = "u1", **spec: Any) -> dict[str, Any]:
    metadata = {"name": name, "uid": uid, "resourceVersion": str(version)}
    return {"metadata": metadata, "spec": spec}


def test_our_own_write_is_read_until_the_watch_brings_it_or_a_newer_version() -> None:
    server = Server()
    watched = Watched(server.get)
    watched.seen(LEASES, None, "apps", versioned("a", 5, holder="old"))
    watched.wrote(LEASES, "apps", versioned("a", 7, holder="ours"))
    watched.seen(LEASES, "MODIFIED", "apps", versioned("a", 6, holder="between"))  # the watch is behind
    assert (watched.get(LEASES, "apps", "a") or {})["spec"] == {"holder": "ours"}
    watched.seen(LEASES, "MODIFIED", "apps", versioned("a", 8, holder="theirs"))
    assert (watched.get(LEASES, "apps", "a") or {})["spec"] == {"holder": "theirs"} and server.gets == 0


def test_what_we_deleted_stays_gone_until_created_again() -> None:
    server = Server()
    watched = Watched(server.get)
    watched.listed(LEASES)
    watched.seen(LEASES, None, "apps", versioned("a", 5))
    watched.deleted(LEASES, "apps", "a")
    watched.seen(LEASES, "MODIFIED", "apps", versioned("a", 6))  # an event from before the deletion
    assert watched.get(LEASES, "apps", "a") is None
    watched.seen(LEASES, "DELETED", "apps", versioned("a", 6))
    watched.seen(LEASES, "ADDED", "apps", versioned("a", 9, uid="u2"))  # a new object, same name
    assert (watched.get(LEASES, "apps", "a") or {})["metadata"]["uid"] == "u2" and server.gets == 0


def test_a_listed_kind_is_not_fetched_and_fresh_reads_always_are() -> None:
    server = Server()
    server.objects["a"] = lease("a", "primary")
    watched = Watched(server.get)
    watched.listed(LEASES)
    assert watched.get(LEASES, "apps", "a") is None and server.gets == 0  # the watch saw none: none
    assert watched.get(LEASES, "apps", "a", fresh=True) is not None and server.gets == 1
    watched.seen(LEASES, None, "apps", lease("a", "primary"))
    watched.seen(LEASES, None, "other", lease("b", "primary"))
    assert [o["metadata"]["name"] for o in watched.select(LEASES, "apps", lambda _: True) or []] == ["a"]
    assert Watched(server.get).select(LEASES, "apps", lambda _: True) is None  # not listed: list it
