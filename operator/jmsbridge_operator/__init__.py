"""The JmsBridge operator (kopf). `kopf run -m jmsbridge_operator` or `jmsbridge operator` starts it.

Importing the package registers the handlers (`main.py`, the one place with `@kopf.on...`). The pure parts
(`render`, `planning`, `status`, `acceptance`, `crdgen`) do not depend on kopf or on a cluster.
"""

from jmsbridge_operator import main as main
