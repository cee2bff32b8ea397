"""What the platform team lets a bridge ask of Kubernetes (the chart's `bridgePolicy` values).

Whoever may write a JmsBridge in a namespace gets pods that run there. Without limits of the operator's own,
that is any service account of the namespace and pods as privileged as the bridge asks (root, host paths,
added capabilities); many clusters do not label their namespaces for Pod Security admission, so the limits
are here, not left to the cluster's goodwill. A bridge beyond them is refused as any invalid spec is
(`InvalidSpec`, the last valid spec keeps running), naming the field and the chart value that would allow
it. Pure.
"""

from __future__ import annotations

import dataclasses

from bridge_job.config import JmsBridgeSpec
from jmsbridge_operator.condition_catalogue import INVALID_SPEC
from jmsbridge_operator.conditions import Problem
from jmsbridge_operator.pod_security import beyond_restricted


@dataclasses.dataclass(frozen=True)
class Policy:
    # The service accounts a bridge's pods may run as besides the bridge's own (spec.spark.serviceAccount).
    service_accounts: frozenset[str] = frozenset()
    # Pods beyond the Pod Security Standard `restricted` (root, host paths, capabilities, escalation).
    privileged_pods: bool = False
    # Secrets a bridge uses without their owner's mark for it (secret_marks.py).
    unmarked_secrets: bool = False


DEFAULT_POLICY = Policy()


def policy_problems(spec: JmsBridgeSpec, policy: Policy) -> tuple[Problem, ...]:
    """Why `policy` refuses a bridge of `spec`, field by field (none: it may run)."""
    problems: list[Problem] = []
    account = spec.spark.service_account
    if account is not None and account not in policy.service_accounts:
        allowed = ", ".join(sorted(policy.service_accounts))
        others = f", or as {allowed}" if allowed else ""
        problems.append(
            Problem(
                INVALID_SPEC,
                "spec.spark.serviceAccount",
                "spec.spark.serviceAccount: the bridges' pods run as the bridge's own service account"
                f"{others}, not {account!r} (the platform team lists the others in the chart's "
                "bridgePolicy.serviceAccounts; or remove spec.spark.serviceAccount)",
            )
        )
    pod = spec.spark.pod
    if pod is not None and not policy.privileged_pods:
        sources = {volume.name: next(iter(volume.model_extra or {}), "") for volume in pod.volumes}
        for field, what in beyond_restricted(pod.security_context, pod.container_security_context, sources):
            problems.append(
                Problem(
                    INVALID_SPEC,
                    f"spec.spark.pod.{field}",
                    f"spec.spark.pod.{field}: {what}, which the Pod Security Standard restricted forbids "
                    "(the platform team allows it with the chart's bridgePolicy.privilegedPods=true)",
                )
            )
    return tuple(problems)
