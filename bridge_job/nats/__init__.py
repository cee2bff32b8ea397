"""The NATS adapter: one nats-py connection per process on an event loop of its own, used from plain
threads (nats/link.py), and the plain message it hands over (nats/message.py)."""
