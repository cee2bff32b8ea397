"""The job image's file layout, assembled from this repository as its Dockerfile COPYs it
(tests/test_images.py), runs under spark-submit as the spark-operator starts a SparkApplication's driver,
on real brokers.

Two steps of the job image are played, not run: `pip install` of the copied sources (here the copied
sources are put on PYTHONPATH) and the image's Python (here this interpreter).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bridge_job.config import CONFIG_MOUNT_PATH, JmsBridge, JmsBridgeRoute, job_config
from bridge_job.jms.settings import DEFAULT_CLASSPATH
from bridge_job.message import Destination, DestinationKind, JmsMessage
from jmsbridge.local import ACTIVEMQ_HOME, BridgeJob
from tests.brokers import ActiveMqBroker, KafkaBroker
from tests.support.harness import bridge_document, read_topics, route_document, send
from tests.test_images import ACTIVEMQ_CLIENT_JARS, JOB_DOCKERFILE, Image, assemble, image_path

pytestmark = pytest.mark.e2e


@dataclass
class SubmittedJob(BridgeJob):
    """The entry file under spark-submit, as a process group (BridgeJob's waits and stops)."""

    argv: list[str] = field(default_factory=list)

    def start(self) -> SubmittedJob:
        log_path = self.work_dir / f"driver-{len(self.logs)}.log"
        self.logs.append(log_path)
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=self.env,
                cwd=self.work_dir,
            )  # fmt: skip
        return self


def spark_submit() -> Path:
    import pyspark

    path = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    assert path.exists(), f"pyspark ships no {path}"
    return path


def rendered_application(bridge: dict[str, Any], route: dict[str, Any]) -> tuple[dict[str, Any], str, str]:
    """The primary SparkApplication the operator renders, and the job config file its ConfigMap holds
    (name and text)."""
    from jmsbridge_operator.render import render

    model = JmsBridge.model_validate(bridge)
    rendered = render(model, job_config(model, [JmsBridgeRoute.model_validate(route)]))
    ((config_file, config_text),) = rendered.config_map["data"].items()
    return rendered.applications["primary"], config_file, config_text


def test_the_job_image_layout_runs_under_spark_submit(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    n = uuid.uuid4().hex[:8]
    queue, topic = f"orders.{n}", f"orders-{n}"
    kafka.create_topics(topic)
    bridge = bridge_document(f"image-{n}", activemq, kafka, [{"queue": queue}])
    del bridge["spec"]["jms"]["classpath"]  # the image's default: /opt/jmsbridge/jms-lib/*.jar
    bridge["metadata"] |= {"namespace": "apps", "uid": "uid-1"}
    bridge["spec"]["spark"]["checkpoint"] = {"path": str(tmp_path / "checkpoints")}  # an emptyDir there
    route = route_document("all", f"image-{n}", topic)
    route["metadata"]["namespace"] = "apps"
    application, config_file, config_text = rendered_application(bridge, route)

    root = assemble(Image.parse(JOB_DOCKERFILE), tmp_path / "image")

    def inside(path: str) -> Path:
        return root / path.lstrip("/")

    # The image's RUN mkdir, filled as spec.jms.clientLibraries or a derived image fills it.
    jms_lib = inside(str(Path(DEFAULT_CLASSPATH[0]).parent))
    jms_lib.mkdir(parents=True)
    for jar in ACTIVEMQ_CLIENT_JARS:
        (jms_lib / jar).symlink_to(ACTIVEMQ_HOME / "lib" / jar)
    # The ConfigMap, mounted where the driver's volumeMount puts it.
    inside(CONFIG_MOUNT_PATH).mkdir(parents=True)
    (inside(CONFIG_MOUNT_PATH) / config_file).write_text(config_text)

    spec = application["spec"]
    assert CONFIG_MOUNT_PATH in {m["mountPath"] for m in spec["driver"]["volumeMounts"]}
    sources = inside("/opt/jmsbridge/src")
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join([str(sources), str(sources / "operator")]),  # pip install, played
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "JMSBRIDGE_CLASSPATH": str(jms_lib / "*.jar"),  # DEFAULT_CLASSPATH, re-rooted
    }
    where = "import bridge_job, jmsbridge; print(bridge_job.__file__, jmsbridge.__file__)"
    imported = subprocess.run(
        [sys.executable, "-c", where], env=env, cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert all(Path(p).is_relative_to(sources) for p in imported.stdout.split()), imported.stdout

    argv = [str(spark_submit()), "--master", "local[2]", "--conf", "spark.ui.enabled=false"]
    argv += [arg for key, value in spec["sparkConf"].items() for arg in ("--conf", f"{key}={value}")]
    argv.append(str(inside(image_path(spec["mainApplicationFile"]))))
    argv += [str(inside(arg)) if arg.startswith("/") else arg for arg in spec["arguments"]]
    job = SubmittedJob([], tmp_path, env=env, argv=argv).start()
    try:
        job.wait_running(timeout=180)
        sent = send(
            activemq, [JmsMessage(Destination(DestinationKind.QUEUE, queue), body=f"m{i}") for i in range(5)]
        )
        records = read_topics(kafka, [topic], len(sent), settle=1.0)
        assert job.process is not None and job.process.poll() is None, job.log()[-3000:]  # still running
    finally:
        job.stop()
    assert sorted(r.value or b"" for r in records) == [f"m{i}".encode() for i in range(5)]
    assert {r.key for r in records} == {s.encode() for s in sent}  # keyed by JMSMessageID, the default
