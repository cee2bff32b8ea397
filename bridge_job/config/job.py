"""What the job runs: the resources as a user writes them, a bridge's routes in effect, the JobConfig the
operator renders, and the errors a user can act on."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bridge_job.config.bridge import JmsBridgeSpec
from bridge_job.config.names import default_bridge_id
from bridge_job.config.route import Correlation, JmsBridgeRouteSpec
from bridge_job.config.schema import (
    BRIDGE_ID_PATTERN,
    BRIDGE_KIND,
    NAME_PATTERN,
    ROUTE_KIND,
    CamelModel,
    Direction,
    SoftFailurePolicy,
)


class ObjectMeta(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    name: Annotated[str, Field(pattern=NAME_PATTERN, max_length=253)]
    namespace: str | None = None


class JmsBridge(CamelModel):
    model_config = ConfigDict(extra="ignore")  # status and the like are not ours to validate
    api_version: Literal["jmsbridge.dev/v1alpha1"]
    kind: Literal["JmsBridge"]
    metadata: ObjectMeta
    spec: JmsBridgeSpec


class JmsBridgeRoute(CamelModel):
    model_config = ConfigDict(extra="ignore")
    api_version: Literal["jmsbridge.dev/v1alpha1"]
    kind: Literal["JmsBridgeRoute"]
    metadata: ObjectMeta
    spec: JmsBridgeRouteSpec


class Route(CamelModel):
    """A route in effect: its resource name plus its spec."""

    name: str
    spec: JmsBridgeRouteSpec


CheckpointPosition = Literal["earliest", "committed", "latest"]
CHECKPOINT_POSITIONS: tuple[CheckpointPosition, ...] = ("earliest", "committed", "latest")


class CheckpointReset(CamelModel):
    """A reset of the checkpoint that the operator was asked for (the annotation
    `jmsbridge.dev/reset-checkpoint`): the active instance performs it once, before it checks the
    checkpoint, and records `id` in the checkpoint, so that a restart does not reset again."""

    to: CheckpointPosition
    id: Annotated[str, Field(min_length=1)]


class JobConfig(CamelModel):
    """What the operator renders into the bridge's ConfigMap and the job reads: one bridge, its routes."""

    bridge_id: Annotated[str, Field(pattern=BRIDGE_ID_PATTERN, max_length=40)]
    namespace: str | None = None
    bridge: JmsBridgeSpec
    routes: list[Route] = Field(default_factory=list)
    checkpoint_reset: CheckpointReset | None = None

    @property
    def journal_topic(self) -> str:
        return self.bridge.kafka.journal_topic or f"{self.bridge_id}.jms-bridge.journal"

    @property
    def pending_topic(self) -> str:
        """The compacted topic of requests waiting for a `messageId` answer (routing/pending.py)."""
        return f"{self.bridge_id}.jms-bridge.pending"

    @property
    def keeps_pending_requests(self) -> bool:
        """Whether a route sends requests to a JMS service that answers with the request's JMSMessageID."""
        return any(
            r.spec.reply is not None and r.spec.reply.correlation is Correlation.MESSAGE_ID
            for r in self.routes_for(Direction.KAFKA_TO_JMS)
        )

    @property
    def reply_topics(self) -> dict[str, str]:
        """Every topic a reply may go to (a kafkaToJms route's `reply.topics`), with the route that allows
        it: the first route that names it."""
        allowed: dict[str, str] = {}
        for route in self.routes_for(Direction.KAFKA_TO_JMS):
            for topic in route.spec.reply.topics if route.spec.reply is not None else ():
                allowed.setdefault(topic, route.name)
        return allowed

    @property
    def uses_nats(self) -> bool:
        return any(r.spec.direction.uses_nats for r in self.routes)

    def routes_for(self, direction: Direction) -> list[Route]:
        return [r for r in self.routes if r.spec.direction is direction]

    def source_topics(self) -> set[str]:
        """The `kafkaTopic`s (names and patterns) the kafkaToJms routes read."""
        return {r.spec.topic for r in self.routes_for(Direction.KAFKA_TO_JMS)}

    def soft_failure_policy(self, route: Route | None) -> SoftFailurePolicy:
        """How a soft failure on `route` is handled: the route's policy, else the bridge's (also for a
        message no route took). The one rule every flow and this model's own check apply."""
        if route is not None and route.spec.on_soft_failure is not None:
            return route.spec.on_soft_failure
        return self.bridge.routing.on_soft_failure

    @model_validator(mode="after")
    def _routes_runnable(self) -> Self:
        ordered = sorted(self.routes, key=route_sort_key)
        if ordered != self.routes:
            raise ValueError("routes must be in (order, name) order")
        dead_letter = self.bridge.routing.dead_letter_topic
        for route in self.routes:
            if route.spec.direction.uses_nats and self.bridge.nats is None:
                raise ValueError(
                    f"route {route.name!r} is {route.spec.direction.value} but the bridge sets no spec.nats"
                )
            if route.spec.format.registered and self.bridge.kafka.schema_registry is None:
                raise ValueError(
                    f"route {route.name!r} has format {route.spec.format.value} but the bridge sets no "
                    "kafka.schemaRegistry"
                )
            if route.spec.reply is not None and self.bridge.jms.reply_queue is None:
                raise ValueError(f"route {route.name!r} has `reply` but the bridge sets no jms.replyQueue")
            if self.soft_failure_policy(route) is SoftFailurePolicy.DEAD_LETTER and dead_letter is None:
                raise ValueError(
                    f"route {route.name!r} dead-letters soft failures but the bridge sets no "
                    "routing.deadLetterTopic"
                )
        return self


def route_sort_key(route: Route) -> tuple[int, str]:
    return (route.spec.order, route.name)


def bridge_id_of(bridge: JmsBridge, ran_as: str | None = None) -> str:
    """spec.bridgeId, else the id the bridge ran as (`ran_as`, its status's), else the default for its
    namespace and name: an id never changes under a bridge that ran."""
    metadata = bridge.metadata
    return bridge.spec.bridge_id or ran_as or default_bridge_id(metadata.namespace, metadata.name)


def job_config(bridge: JmsBridge, routes: Iterable[JmsBridgeRoute], ran_as: str | None = None) -> JobConfig:
    """The JobConfig for a bridge and the routes that reference it (others are ignored); `ran_as` as for
    `bridge_id_of`."""
    mine = [
        Route(name=r.metadata.name, spec=r.spec)
        for r in routes
        if r.spec.bridge_ref.name == bridge.metadata.name
        and (r.metadata.namespace or None) == (bridge.metadata.namespace or None)
    ]
    return JobConfig(
        bridge_id=bridge_id_of(bridge, ran_as),
        namespace=bridge.metadata.namespace,
        bridge=bridge.spec,
        routes=sorted(mine, key=route_sort_key),
    )


class ConfigError(Exception):
    """A resource or config file is invalid; the message says where and what to fix."""


def field_errors(error: ValidationError) -> list[tuple[str, str]]:
    """`(field path, message)` for each problem of a pydantic error, the path dotted."""
    return [
        (".".join(str(p) for p in item["loc"]) or "(document)", item["msg"].removeprefix("Value error, "))
        for item in error.errors()
    ]


def describe_validation_error(error: ValidationError, where: str) -> str:
    """One line per problem: `<where>: <field path>: <message>`."""
    return "\n".join(f"{where}: {path}: {message}" for path, message in field_errors(error))


Resource = TypeVar("Resource", JmsBridge, JmsBridgeRoute)


def _json_value(value: object) -> object:
    """What kubectl sends for a value YAML has and JSON has not: a mapping view as an object, a
    timestamp as its text."""
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def as_api_server(model: type[Resource], document: Mapping[str, Any]) -> Resource:
    """The resource as the API server takes it: the document as JSON, its types strict (no "200" for an
    integer, no "on" for a boolean: the CRD's schema refuses them), where pydantic alone would convert.
    ValidationError otherwise."""
    return model.model_validate_json(json.dumps(document, default=_json_value), strict=True)


def parse_resource(document: Mapping[str, Any], where: str) -> JmsBridge | JmsBridgeRoute:
    """Validate one YAML document as a JmsBridge or JmsBridgeRoute."""
    kind = document.get("kind")
    if kind not in (BRIDGE_KIND, ROUTE_KIND):
        raise ConfigError(f"{where}: kind: expected {BRIDGE_KIND} or {ROUTE_KIND}, got {kind!r}")
    try:
        if kind == BRIDGE_KIND:
            return as_api_server(JmsBridge, document)
        return as_api_server(JmsBridgeRoute, document)
    except ValidationError as error:
        raise ConfigError(describe_validation_error(error, where)) from None
