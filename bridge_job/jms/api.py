"""Which JMS API a provider's client implements: `javax.jms` (JMS 1.1 and 2.0) or `jakarta.jms` (Jakarta
Messaging 3: the Artemis and IBM MQ Jakarta clients, every Jakarta EE 9+ server's).

The two are the same interfaces under two package names. The adapter reads the API off the connection
factory (the ConnectionFactory interface it implements) and looks up every JMS type of that connection in
its package: nothing in a bridge's configuration says which, and the same `JmsBridge` works with either
client of a provider.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import jpype

from bridge_job.jms.errors import JmsError

PACKAGES = ("javax.jms", "jakarta.jms")


@functools.cache
def _interface(package: str, name: str) -> Any:
    """The JMS type `package.name`; None when that API is not on the JVM's classpath."""
    try:
        return jpype.JClass(f"{package}.{name}")
    except TypeError:  # JPype: class not found
        return None


@dataclass(frozen=True)
class JmsApi:
    package: str  # one of PACKAGES

    def type(self, name: str) -> Any:
        """The JMS interface `name` (e.g. "Session") of this API."""
        found = _interface(self.package, name)
        if found is None:
            raise JmsError(f"{self.package}.{name} is not on the JMS classpath")
        return found


def api_of(factory_class: Any) -> JmsApi:
    """The API whose ConnectionFactory `factory_class` (a JPype class) implements."""
    for package in PACKAGES:
        interface = _interface(package, "ConnectionFactory")
        if interface is not None and issubclass(factory_class, interface):
            return JmsApi(package)
    names = " nor ".join(f"{package}.ConnectionFactory" for package in PACKAGES)
    raise JmsError(f"{factory_class.class_.getName()} is neither a {names}")
