"""Conditions and problems: what the operator says in a status, with one limit on how long it says it.

kstatus conventions, read by Flux and Argo CD: a condition has a `type` and a `reason` (CamelCase words),
a `status` (True, False or Unknown) and a `message` that says what is wrong and what to fix. The Kafka
checks, the gate and the status computation all make `Condition`s, with the types and reasons named in
`condition_catalogue.py`; a condition gets its `lastTransitionTime` and `observedGeneration` when it is
written into a status (`status.conditions`).

A `Problem` is one thing wrong that a person must fix, found by the validation of a resource or by a
Kafka check; conditions and the `jmsbridge validate` command say them.

Kubernetes allows 32 KiB in a condition message; a reader gives up much earlier, so every message is cut
at `MESSAGE_LIMIT` characters: a list of problems at a whole problem (`join`), saying how many were left
out; a single message in the middle (`clip`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator

from bridge_job.config import CamelModel

MESSAGE_LIMIT = 1024
REASON_PATTERN = r"^[A-Z][A-Za-z0-9]*$"

Status = Literal["True", "False", "Unknown"]


def clip(message: str) -> str:
    """The message, cut to MESSAGE_LIMIT characters."""
    return message if len(message) <= MESSAGE_LIMIT else message[: MESSAGE_LIMIT - 3] + "..."


def join(parts: Sequence[str]) -> str:
    """Parts joined with `; `, cut at a whole part when too long, saying how many were left out."""
    kept: list[str] = []
    length = 0
    for index, part in enumerate(parts):
        if length + len(part) + 2 > MESSAGE_LIMIT - 40:
            kept.append(f"... and {len(parts) - index} more")
            break
        kept.append(part)
        length += len(part) + 2
    return clip("; ".join(kept))


def _written_with_a_time(schema: dict[str, Any]) -> None:
    schema["required"] = [*schema.get("required", []), "lastTransitionTime"]


class Condition(CamelModel):
    """A status condition: what is true of the resource, a one-word reason, and what to fix."""

    # The model is the status schema of our CRDs too. A condition in a status always has its
    # lastTransitionTime; one being made does not have it yet.
    model_config = ConfigDict(json_schema_extra=_written_with_a_time)

    type: Annotated[str, Field(pattern=REASON_PATTERN)]
    """The condition's type: Ready, Reconciling, Stalled, Accepted, KafkaReady..."""
    status: Status
    """True, False or Unknown."""
    reason: Annotated[str, Field(pattern=REASON_PATTERN)]
    """One CamelCase word saying why (docs/troubleshooting.md)."""
    message: str = ""
    """What is the matter and what to do, in words."""
    last_transition_time: str | None = Field(
        default=None, description="RFC 3339 time of the last change of `status`."
    )
    observed_generation: int | None = None
    """The metadata.generation the condition was found for."""

    def __init__(self, type: str, status: Status, reason: str, message: str = "", **written: Any) -> None:
        """Positional like a record: `Condition("Ready", "False", "Starting", "...")`."""
        fields: dict[str, Any] = {"type": type, "status": status, "reason": reason, "message": message}
        super().__init__(**fields, **written)

    @field_validator("message")
    @classmethod
    def _clipped(cls, message: str) -> str:
        return clip(message)


@dataclasses.dataclass(frozen=True)
class Transition:
    """A change worth a Kubernetes Event."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str


@dataclasses.dataclass(frozen=True)
class Problem:
    """One thing wrong that a person must fix."""

    reason: str  # one CamelCase word, e.g. InvalidSpec, TopicNotFound
    subject: str  # what it is about: a field path, a topic, a consumer group
    message: str  # what is wrong and what to fix, naming the subject
