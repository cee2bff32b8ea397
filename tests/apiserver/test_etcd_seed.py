"""A control plane started from an etcd seed serves what the seed's maker stored, under its own CA, token and
ports, and its controllers work on it."""

from __future__ import annotations

import os
import shutil

import pytest

from jmsbridge.control_plane import ControlPlane, etcd_seed
from jmsbridge.local import wait_until
from testbed.apiserver.client import KubeApi

pytestmark = pytest.mark.slow  # starts two control planes of its own


def _store_a_config_map(plane: ControlPlane) -> None:
    kube = KubeApi(plane)
    kube.ensure_namespace("seeded")
    kube.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept", "namespace": "seeded"}}
    )


def test_a_plane_started_from_a_seed_serves_what_its_maker_stored() -> None:
    seed = etcd_seed(f"test-{os.urandom(4).hex()}", _store_a_config_map)
    try:
        with ControlPlane(seed=seed) as plane:
            kube = KubeApi(plane)
            assert kube.get("v1", "ConfigMap", "kept", namespace="seeded") is not None
            kube.ensure_namespace("new")  # the namespace controller runs, and the ServiceAccount one
            wait_until(
                lambda: kube.get("v1", "ServiceAccount", "default", namespace="new") is not None,
                30,
                "namespace new's ServiceAccount",
            )
        assert etcd_seed(seed.name, _never) == seed  # made once
    finally:
        shutil.rmtree(seed)


def _never(plane: ControlPlane) -> None:
    raise AssertionError("the seed was made again")
