"""The job's one config file: a rendered JobConfig is used as it is, resource YAML is rendered first."""

from __future__ import annotations

from pathlib import Path

import yaml

from bridge_job.config.rendered import RenderedConfig
from testbed.builders import config, route


def test_a_rendered_config_is_used_as_it_is_even_when_a_value_says_kind(tmp_path: Path) -> None:
    rendered = config(route("typed", "orders", match={"headers": {"JMSType": "kind: order"}}))
    mounted = tmp_path / "job.yaml"
    mounted.write_text(yaml.safe_dump(rendered.dump(), sort_keys=False))

    job = RenderedConfig([mounted], tmp_path / "work")

    assert job.path == mounted
    assert job.config == rendered


def test_resource_yaml_is_rendered_into_the_work_dir(tmp_path: Path) -> None:
    expected = config(route("all", "orders"))
    bridge = {"apiVersion": "jmsbridge.dev/v1alpha1", "kind": "JmsBridge", "metadata": {"name": "orders"}}
    bridge["spec"] = expected.bridge.dump()
    routes = {"apiVersion": "jmsbridge.dev/v1alpha1", "kind": "JmsBridgeRoute", "metadata": {"name": "all"}}
    routes["spec"] = expected.routes[0].spec.dump()
    files = tmp_path / "bridge.yaml"
    files.write_text(yaml.safe_dump_all([bridge, routes], sort_keys=False))
    (tmp_path / "work").mkdir()

    job = RenderedConfig([files], tmp_path / "work")

    assert job.path == tmp_path / "work" / "job.yaml"
    assert job.config == expected
    assert yaml.safe_load(job.path.read_text()) == expected.dump()
