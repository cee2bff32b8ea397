"""NATS -> JMS: natsToJms routes, one-way forwarding and requests answered by JMS services
(docs/nats.md)."""
