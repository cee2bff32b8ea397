"""The JmsBridge operator (kopf). `kopf run -m jmsbridge_operator.main` or `jmsbridge operator` starts it.

Importing `jmsbridge_operator.main` registers the handlers (the one place with `@kopf.on...`); importing
the package does not, so that the commands that use only the pure parts (`jmsbridge validate`, `render`:
`render`, `planning`, `status`, `acceptance`, `crdgen`, which depend on neither kopf nor a cluster) start
without kopf (0.75 CPU-s instead of 1.35).
"""
