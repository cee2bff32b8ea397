"""The egress's way to NATS (jmsToNats): what the egress publishes to NATS for the jmsToNats routes
(converting.py: the message; publishing.py: the egress task's connection). The egress task runs it beside
its Kafka writes."""
