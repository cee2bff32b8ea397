"""The NATS service (query `nats`): natsToJms routes, one-way forwarding and requests answered by JMS
services, and the answers of jmsToNats requests (docs/nats.md)."""
