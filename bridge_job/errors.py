"""The job's generic errors, shared by every stage and adapter."""

from __future__ import annotations


class BridgeStopped(Exception):
    """A hard failure: the bridge must stop. The message names what is wrong and what to fix."""

    PREFIX = "jmsbridge stopped: "

    def __init__(self, message: str) -> None:
        super().__init__(self.PREFIX + message)
        self.reason = message
