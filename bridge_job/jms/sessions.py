"""What a consumer and a producer share: one JMS session of their own, committed, rolled back, closed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bridge_job.jms.errors import JavaException, JmsError, jms_error


class SessionOwner:
    """Owns one JMS `Session`. Subclasses set the session and the two phrases used in errors."""

    _session: Any
    _closed: bool
    _check_connection: Callable[[], None]
    _batch: str  # what commit and rollback act on, e.g. "the batch from queue://orders"
    _owner: str  # what close closes, e.g. "the consumer of queue://orders"

    def commit(self) -> None:
        """Commit the transacted session: received messages are acknowledged, sent ones delivered."""
        self._end_transaction(self._session.commit, "commit")

    def rollback(self) -> None:
        """Undo the transaction: received messages are redelivered, sent ones discarded."""
        self._end_transaction(self._session.rollback, "roll back")

    def _end_transaction(self, end: Callable[[], None], verb: str) -> None:
        try:
            end()
        except JavaException as error:
            self._check_connection()
            raise jms_error(f"cannot {verb} {self._batch}", error) from error

    def close(self) -> None:
        """Close the session (an open transaction is rolled back). Closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            self._session.close()
        except JavaException as error:
            try:
                self._check_connection()
            except JmsError:
                return  # the connection is closed or lost, and the session with it
            raise jms_error(f"cannot close {self._owner}", error) from error
