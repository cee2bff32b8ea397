"""The JmsBridge operator (kopf). `kopf run -m jmsbridge_operator` or `jmsbridge operator` starts it."""
