"""The natsToJms routes of one bridge in one process: subscriptions, sends to JMS, answers, timeouts.

NATS pushes: a subscription is a standing thing, not a range to read. The service holds the process's
subscriptions (one per route, in the route's queue group) and three threads:

- the sender takes what the subscriptions delivered in batches and sends each batch to JMS in one
  transaction; a request goes with JMSReplyTo this process's reply queue (a TemporaryQueue of its JMS
  connection) and a JMSCorrelationID of the bridge's, and waits in `InFlight` (nats_service/inflight.py)
  under that id and under its JMSMessageID;
- the answerer takes the answers off the reply queue, publishes each to its requester's reply subject,
  flushes, and only then commits the JMS session (an answer is acknowledged once NATS has it);
- the keeper answers the requests past their route's `timeoutSeconds` with a `408 Request Timeout`
  status, watches the NATS connection against the patience, and stops the service once no task has
  hosted it for `RELEASE_SECONDS`.

The sender also takes the NATS services' answers to JMS requesters (the requests of jmsToNats routes):
each goes to the destination its reply subject names once the subject's MAC verifies
(routing/nats_replies.py). An answer on the bridge's reply subjects that the bridge did not sign, that
expired, or whose route is no jmsToNats route of the bridge, is dropped, counted as `unknown_replies` of
no route (`-`) and logged, rate-limited: anyone may publish there, and what the bridge did not sign names
no route of the metrics.

A service lives in a Spark task's Python worker and is hosted by the NATS query's tasks
(nats_service/interval.py): as long as one runs, the subscriptions stay; between two intervals nothing is
unsubscribed, so no message meets a missing subscriber. A service no task hosts any more (the next
interval's task went to another worker, which made its own in the same queue groups) drains its
subscriptions, sends what they delivered, waits for its requests' answers or deadlines, and closes.

A JMS failure is waited out as in the other flows (the batch is sent again on a new connection, for up to
the patience); the reply queue goes with the failed connection, so the requests then in flight time out.
A soft failure (a message the route's format cannot read, a destination the provider refuses) follows
the route's policy, and a request that cannot go is answered at once with a `400 Bad Request` status
saying why.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from bridge_job.config import ConfigError, Direction, Format, JmsSource, JobConfig, Route
from bridge_job.config.loading import WatchedConfig
from bridge_job.faults.outages import Outage
from bridge_job.faults.stops import BridgeStopped
from bridge_job.jms import JmsConnection, JmsError, JmsProducer
from bridge_job.jms.connection import process_client_id
from bridge_job.jms.errors import refusal_of_one_message
from bridge_job.jms.link import JMS_HINT, JmsLink
from bridge_job.jms.settings import jms_classpath, jms_credentials, jms_tls_stores
from bridge_job.kafka.clients import producer_config
from bridge_job.kafka.writing import Addressed, write_at_least_once
from bridge_job.message import Destination, DestinationKind, JmsMessage
from bridge_job.nats.link import NatsLink, Subscription
from bridge_job.nats.message import (
    BAD_GATEWAY_STATUS,
    BAD_REQUEST_STATUS,
    ERROR_HEADER,
    TIMEOUT_STATUS,
    NatsMessage,
    is_no_responders,
)
from bridge_job.nats_service.converting import (
    DEFAULT_QUEUE_GROUP,
    answer,
    as_record,
    first_route,
    nats_answer_to_jms,
    nats_loop_mark,
    nats_routes,
    queue_group,
    requesting_route,
    subject_of,
    to_jms,
)
from bridge_job.nats_service.inflight import InFlight, Request
from bridge_job.routing.failures import SoftFailure, SoftFailureReason, dead_letter_record, dispose
from bridge_job.routing.loops import LoopGuard
from bridge_job.routing.nats_replies import replies_subject, way_back
from bridge_job.signing import Forgeries
from bridge_job.spark import latency

log = logging.getLogger("jmsbridge.nats")

RELEASE_SECONDS = 5.0  # unhosted this long: the next interval's task went elsewhere
BATCH_MESSAGES = 500  # per JMS transaction
FIRST_WAIT_SECONDS = 0.05
KEEPER_SECONDS = 0.05  # how late a timeout status may be
ANSWERS_PER_COMMIT = 100
UNROUTED = "-"  # the route of what no route takes any more


@dataclass
class NatsCounts:
    """What a route's subscription and its requests came to; summed over a task's interval."""

    received: int = 0
    forwarded: int = 0  # one-way messages sent to JMS
    requests: int = 0  # requests sent to JMS
    replies: int = 0  # answers published to their requesters
    timeouts: int = 0  # requests answered with a 408 status
    refused: int = 0  # requests answered with a 400 status: they could not go to JMS
    unknown_replies: int = (
        0  # answers to no request in flight here (late, another process's), unsigned, expired
    )
    loops: int = 0  # messages this bridge published from the JMS destination they would go back to
    answered: int = 0  # jmsToNats: NATS answers sent to their JMS requesters
    no_responders: int = 0  # jmsToNats: requests no NATS service took
    dead_lettered: int = 0
    skipped: int = 0
    round_trip_ms: int = 0  # request taken -> answer published, summed over the replies
    max_round_trip_ms: int = 0
    round_trip_buckets: list[int] = dataclasses.field(default_factory=latency.no_latencies)  # per reply

    def since(self, earlier: NatsCounts) -> NatsCounts:
        changed: dict[str, Any] = {
            f.name: getattr(self, f.name) - getattr(earlier, f.name) for f in fields(self) if f.type == "int"
        }
        changed["max_round_trip_ms"] = self.max_round_trip_ms
        mine, theirs = self.round_trip_buckets, earlier.round_trip_buckets
        changed["round_trip_buckets"] = [now - then for now, then in zip(mine, theirs, strict=True)]
        return NatsCounts(**changed)

    def plus(self, other: NatsCounts) -> NatsCounts:
        summed: dict[str, Any] = {
            f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self) if f.type == "int"
        }
        summed["max_round_trip_ms"] = max(self.max_round_trip_ms, other.max_round_trip_ms)
        mine, theirs = self.round_trip_buckets, other.round_trip_buckets
        summed["round_trip_buckets"] = [a + b for a, b in zip(mine, theirs, strict=True)]
        return NatsCounts(**summed)


Subscribed = tuple[str, str]  # (subject, queue group)
Delivered = tuple[Subscribed, NatsMessage]


@dataclass(frozen=True, slots=True)
class Send:
    message: NatsMessage
    route: Route | None
    jms: JmsMessage
    kind: str  # what it counts as once sent: forwarded, requests, or answered (to a JMS requester)
    request: Request | None = None
    correlation: str | None = None


class NatsService:
    def __init__(self, config_path: str) -> None:
        self._watched = WatchedConfig(Path(config_path))
        config = self.config
        assert config.bridge.nats is not None  # JobConfig requires it for natsToJms routes
        self.bridge_id = config.bridge_id
        patience = config.bridge.outages.patience_seconds
        name = process_client_id(self.bridge_id, "nats")
        self.nats = NatsLink(config.bridge.nats, name, patience)
        credentials, classpath, jms = jms_credentials(config), jms_classpath(config), config.bridge.jms
        stores = jms_tls_stores(config)
        self.jms = JmsLink(lambda: JmsConnection(jms, credentials, classpath, name, stores))
        self.inflight = InFlight()
        self._loops = LoopGuard(
            "NATS messages with this bridge's loop mark and no valid jmsbridge.origin.mac were sent to JMS, "
            "not dropped as loops (forged, or published before the bridge signed its marks)"
        )
        self._key = self._loops.key
        self._forged_answers = Forgeries(
            f"dropped answers on the NATS reply subjects of {self.bridge_id}, counted as unknown_replies"
        )
        self.failure: BridgeStopped | None = None
        self.closed = threading.Event()
        self._incoming: queue.Queue[Delivered] = queue.Queue()
        self._counts: dict[str, NatsCounts] = {}
        self._reported: dict[str, NatsCounts] = {}  # the counts as a task last handed them to Spark
        self._counts_lock = threading.Lock()
        self._subscriptions: dict[Subscribed, Subscription] = {}
        self._subscriptions_lock = threading.Lock()  # the hosting task follows the routes, the keeper drains
        self._followed: JobConfig | None = None
        self._reply: tuple[JmsConnection, Destination] | None = None
        self._reply_lock = threading.Lock()
        self._replies = (
            replies_subject(self.bridge_id),
            DEFAULT_QUEUE_GROUP.format(bridge_id=self.bridge_id),
        )
        self._hosts = 0
        self._unsent = 0  # delivered by a subscription, not yet sent or refused: a drain waits for them
        self._unhosted_since: float | None = None
        self._draining = threading.Event()
        self.nats.connect()
        self._jms_ready()  # the first messages the subscriptions bring need not wait for it
        self.follow(config)
        self._threads = [
            threading.Thread(target=self._guarded(work), name=f"{name}-{work.__name__}", daemon=True)
            for work in (self._send_loop, self._answer_loop, self._keep_loop)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def config(self) -> JobConfig:
        try:
            return self._watched.current()
        except ConfigError:  # the driver reports the change it refuses and keeps the routes in effect
            return self._watched.loaded

    # --- hosting: the NATS query's tasks --------------------------------------------------------

    def host(self) -> bool:
        """Hosted by one more task; False when it is draining already (the task needs a new service)."""
        with self._counts_lock:  # the keeper decides to drain under it too: one or the other comes first
            if self._draining.is_set():
                return False
            self._hosts += 1
            self._unhosted_since = None
            return True

    def release(self) -> None:
        with self._counts_lock:
            self._hosts -= 1
            if self._hosts == 0:
                self._unhosted_since = time.monotonic()

    def counts(self) -> dict[str, NatsCounts]:
        with self._counts_lock:
            return {route: NatsCounts(**asdict(c)) for route, c in self._counts.items()}

    def unreported(self, take: bool = True) -> dict[str, NatsCounts]:
        """What each route did since a task last took it: counted between two intervals' tasks too, and
        each message once, whichever task reports it. `take=False` looks without taking (a live report)."""
        with self._counts_lock:
            now = {route: NatsCounts(**asdict(c)) for route, c in self._counts.items()}
            reported = self._reported
            if take:
                self._reported = now
        return {route: counts.since(reported.get(route, NatsCounts())) for route, counts in now.items()}

    def raise_failure(self) -> None:
        if self.failure is not None:
            raise self.failure

    def follow(self, config: JobConfig) -> None:
        """Subscribe as the routes say now: new routes' subjects, no more those of removed ones."""
        if config is self._followed:
            return
        wanted = {(subject_of(r), queue_group(r, self.bridge_id)) for r in nats_routes(config)}
        if config.routes_for(Direction.JMS_TO_NATS):
            wanted.add(self._replies)
        with self._subscriptions_lock:
            if self.draining:
                return
            added, removed = (
                sorted(wanted - set(self._subscriptions)),
                sorted(set(self._subscriptions) - wanted),
            )
            for subscribed in added:
                subject, group = subscribed
                self._subscriptions[subscribed] = self.nats.subscribe(subject, group, self._queue(subscribed))
            for subscribed in removed:
                self.nats.unsubscribe(self._subscriptions.pop(subscribed))
            # The server has the subscriptions once a ping after them is answered; nats-py may send its
            # flush's ping ahead of a subscription still queued, so twice. Logged once true: a requester
            # who read a line may ask.
            self.nats.flush()
            self.nats.flush()
            for subscribed in added:
                log.info("subscribed to NATS subject %s (queue group %s)", *subscribed)
            for subscribed in removed:
                log.info("unsubscribed from NATS subject %s (queue group %s)", *subscribed)
            self._followed = config

    def _queue(self, subscribed: Subscribed) -> Callable[[NatsMessage], None]:
        def put(message: NatsMessage) -> None:
            with self._counts_lock:
                self._unsent += 1
            self._incoming.put((subscribed, message))

        return put

    @property
    def draining(self) -> bool:
        """Taking no more messages: unhosted, failed or closed."""
        return self._draining.is_set()

    # --- the threads -----------------------------------------------------------------------------

    def _guarded(self, work: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                work()
            except BridgeStopped as stopped:
                self._fail(stopped)
            except Exception as error:  # a bug: the bridge stops and says where
                log.exception("the NATS service failed")
                self._fail(BridgeStopped(f"the NATS service failed: {error!r}"))

        return run

    def _fail(self, stopped: BridgeStopped) -> None:
        if self.failure is None:
            self.failure = stopped
        self.close()  # the task that hosts it raises the failure; nothing more is taken

    def _send_loop(self) -> None:
        outage = Outage(f"JMS sends of the natsToJms routes ({self.bridge_id})", self.nats.outage.patience)
        outage.hint = JMS_HINT
        while not self.closed.is_set():
            batch = self._take()
            if batch:
                try:
                    self._send(batch, outage)
                finally:
                    with self._counts_lock:
                        self._unsent -= len(batch)
            elif self._draining.is_set():
                return

    def _take(self) -> list[Delivered]:
        try:
            batch = [self._incoming.get(timeout=FIRST_WAIT_SECONDS)]
        except queue.Empty:
            return []
        while len(batch) < BATCH_MESSAGES:
            try:
                batch.append(self._incoming.get_nowait())
            except queue.Empty:
                break
        return batch

    def _send(self, batch: list[Delivered], outage: Outage) -> None:
        config = self.config
        routes = nats_routes(config)
        now_ms = int(time.time() * 1000)
        sends: list[Send] = []
        dead_letters: list[Addressed] = []
        for subscribed, message in batch:
            if subscribed == self._replies:
                planned = self._plan_answer(config, message, dead_letters)
            else:
                planned = self._plan(config, routes, subscribed, message, now_ms, dead_letters)
            if planned is not None:
                sends.append(planned)
        self._send_all(config, sends, dead_letters, outage)
        if dead_letters:  # what could not go, the provider's refusals included; acknowledged by Kafka
            kafka = config.bridge.kafka
            patience = config.bridge.outages.patience_seconds
            write_at_least_once(producer_config(kafka), dead_letters, kafka.bootstrap_servers, patience)

    def _plan(
        self,
        config: JobConfig,
        routes: list[Route],
        subscribed: Subscribed,
        message: NatsMessage,
        now_ms: int,
        dead_letters: list[Addressed],
    ) -> Send | None:
        """What to send for a message of a natsToJms route's subscription; None when nothing."""
        route = first_route(routes, message.subject)
        if route is not None and (subject_of(route), queue_group(route, self.bridge_id)) != subscribed:
            return None  # an earlier route's subscription has it too: that one takes it
        self._count(route, "received")
        if route is None:  # its route went since the message came
            failure = SoftFailure(SoftFailureReason.NO_ROUTE, "no natsToJms route takes the subject")
            self._soft_failure(config, failure, message, None, dead_letters)
            return None
        correlation = None if message.reply is None else f"nats-{uuid.uuid4().hex}"
        try:  # JMSReplyTo: the reply queue of the connection that sends it (`_send_chunk`)
            jms = to_jms(message, route, self.bridge_id, self._key, now_ms, None, correlation)
        except SoftFailure as failure:
            self._soft_failure(config, failure, message, route, dead_letters)
            return None
        mark = nats_loop_mark(message, jms.destination, self.bridge_id, self._key)
        if self._loops.is_loop(mark, lambda: f"NATS subject {message.subject}"):
            self._count(route, "loops")
            return None
        if message.reply is None:
            return Send(message, route, jms, "forwarded")
        deadline = message.received + route.spec.timeout_ms / 1000
        request = Request(message.reply, route.name, deadline, message.received)
        return Send(message, route, jms, "requests", request, correlation)

    def _plan_answer(
        self, config: JobConfig, message: NatsMessage, dead_letters: list[Addressed]
    ) -> Send | None:
        """A NATS service's answer to a JMS requester (a jmsToNats route's request): to its JMSReplyTo,
        which only a reply subject the bridge signed, and not yet expired, names."""
        try:
            back = way_back(message.subject, self.bridge_id, self._key, time.time())
        except ValueError as error:
            self._count(None, "unknown_replies")
            self._forged_answers.seen(str(error))
            return None
        route = requesting_route(config, back.route)
        if route is None:
            self._count(None, "unknown_replies")
            self._forged_answers.seen(f"route {back.route!r} is no jmsToNats route of the bridge (any more)")
            return None
        if is_no_responders(message):  # no NATS service took the request: its requester times out
            self._count(route, "no_responders")
            return None
        try:
            jms = nats_answer_to_jms(message, back, route.spec.format, self.bridge_id)
        except SoftFailure as failure:
            self._soft_failure(config, failure, message, route, dead_letters)
            return None
        return Send(message, route, jms, "answered")

    def _send_all(
        self, config: JobConfig, sends: list[Send], dead_letters: list[Addressed], outage: Outage
    ) -> None:
        """Send in one JMS transaction, on a new connection after a failure, within the patience."""
        while sends and not self.closed.is_set():
            try:
                connection, reply_queue = self._reply_queue()
                with connection.producer(transacted=True) as producer:
                    sends = self._send_chunk(config, producer, reply_queue, sends, dead_letters)
                    producer.commit()
            except JmsError as error:
                outage.failed(error)  # BridgeStopped once failing for the patience
                self._drop_jms()
                time.sleep(outage.backoff())
                continue
            outage.clear()
            for send in sends:
                self._count(send.route, send.kind)
            return

    def _send_chunk(
        self,
        config: JobConfig,
        producer: JmsProducer,
        reply_queue: Destination,
        sends: list[Send],
        dead_letters: list[Addressed],
    ) -> list[Send]:
        """Send every message of `sends` in the open transaction; those the provider refused follow their
        route's policy. The ones sent are returned (requests are in flight from now on: no answer can
        come before the commit)."""
        sent = []
        for send in sends:
            message, request = send.message, send.request
            jms = send.jms if request is None else dataclasses.replace(send.jms, reply_to=reply_queue)
            try:
                message_id = producer.send(jms)
            except JmsError as error:
                why = refusal_of_one_message(error, f"NATS {message.subject}")
                failure = SoftFailure(SoftFailureReason.SEND_FAILED, why)
                self._soft_failure(config, failure, message, send.route, dead_letters)
                continue
            if request is not None and send.correlation is not None:
                self.inflight.add(send.correlation, request)
                self.inflight.also(message_id, request)
            sent.append(send)
        return sent

    def _soft_failure(
        self,
        config: JobConfig,
        failure: SoftFailure,
        message: NatsMessage,
        route: Route | None,
        dead_letters: list[Addressed],
    ) -> None:
        where = f"NATS subject {message.subject}"
        name = None if route is None else route.name

        def fail() -> None:
            raise BridgeStopped(
                f"{where}: {failure.reason.value}: {failure.error} (route {name or '-'}, policy fail): fix "
                "the message or the routes, or set onSoftFailure to skip or deadLetter"
            )

        def dead_letter(topic: str) -> None:
            source = f"nats://{message.subject}"
            dead_letters.append((topic, dead_letter_record(as_record(message), failure, source, route=name)))
            self._count(route, "dead_lettered")

        def skip() -> None:
            self._count(route, "skipped")
            log.warning("skipped %s: %s: %s", where, failure.reason.value, failure.error)

        dispose(config, route, fail, skip, dead_letter)
        if message.reply is not None:  # the requester hears at once why, instead of waiting it out
            error = f"{failure.reason.value}: {failure.error}"
            self.nats.publish_status(message.reply, BAD_REQUEST_STATUS, {ERROR_HEADER: _header_text(error)})
            self._count(route, "refused")

    def _answer_loop(self) -> None:
        outage = Outage(f"JMS answers of the natsToJms routes ({self.bridge_id})", self.nats.outage.patience)
        outage.hint = JMS_HINT
        consumer = None
        while not self.closed.is_set():
            if self._draining.is_set() and len(self.inflight) == 0:
                return
            try:
                if consumer is None:
                    connection, reply_queue = self._reply_queue()
                    consumer = connection.consumer(JmsSource(queue=reply_queue.name))
                wait_ms = int(FIRST_WAIT_SECONDS * 1000)
                answers = consumer.receive_batch(ANSWERS_PER_COMMIT, wait_ms, linger=False)
                if answers:
                    for message in answers:
                        self._answer(message)
                    self.nats.flush()  # the requesters have them: now the answers may go from JMS
                    consumer.commit()
            except JmsError as error:
                outage.failed(error)
                consumer = None
                self._drop_jms()
                time.sleep(outage.backoff())
                continue
            outage.clear()

    def _answer(self, message: JmsMessage) -> None:
        request = self.inflight.take(message.correlation_id or "")
        if request is None:
            self._count(None, "unknown_replies")
            log.warning(
                "an answer with JMSCorrelationID %r is for no NATS request in flight here: late (after "
                "its timeout), or sent to another process's reply queue; dropped",
                message.correlation_id,
            )
            return
        config = self.config
        route = next((r for r in nats_routes(config) if r.name == request.route), None)
        fmt = route.spec.format if route is not None else Format.NATIVE  # the route went meanwhile
        try:
            data, headers = answer(message, fmt, self.bridge_id, self._key)
        except SoftFailure as failure:
            error = f"{failure.reason.value}: {failure.error}"
            log.warning(
                "the answer to a NATS request on route %s cannot go to NATS: %s", request.route, error
            )
            self.nats.publish_status(request.reply, BAD_GATEWAY_STATUS, {ERROR_HEADER: _header_text(error)})
            self._count(route, "skipped")
            return
        self.nats.publish(request.reply, data, headers)
        took = int((time.monotonic() - request.received) * 1000)
        with self._counts_lock:
            counts = self._counts.setdefault(request.route, NatsCounts())
            counts.replies += 1
            counts.round_trip_ms += took
            counts.max_round_trip_ms = max(counts.max_round_trip_ms, took)
            latency.count_latency(counts.round_trip_buckets, took)

    def _keep_loop(self) -> None:
        while not self.closed.wait(KEEPER_SECONDS):
            now = time.monotonic()
            for request in self.inflight.expired(now):
                route = next((r for r in nats_routes(self.config) if r.name == request.route), None)
                waited = request.deadline - request.received
                error = f"no answer from JMS within {waited:g}s (route {request.route}, timeoutSeconds)"
                self.nats.publish_status(request.reply, TIMEOUT_STATUS, {ERROR_HEADER: error})
                self._count(route, "timeouts")
            self.nats.check()  # BridgeStopped once NATS has been gone for the patience
            self._release_when_unhosted(now)

    def _release_when_unhosted(self, now: float) -> None:
        if self._draining.is_set():
            with self._counts_lock:
                unsent = self._unsent
            if unsent == 0 and len(self.inflight) == 0:
                self.close()
            return
        with self._counts_lock:
            unhosted = self._unhosted_since
            if unhosted is None or now - unhosted < RELEASE_SECONDS:
                return
            self._draining.set()
        log.info("no task hosts the NATS service of %s any more: draining it", self.bridge_id)
        with self._subscriptions_lock:
            for subscription in self._subscriptions.values():
                self.nats.unsubscribe(subscription)
            self._subscriptions.clear()

    # --- JMS -------------------------------------------------------------------------------------

    def _reply_queue(self) -> tuple[JmsConnection, Destination]:
        """The connection and its reply queue: a new TemporaryQueue with every new connection."""
        with self._reply_lock:
            connection = self.jms.connect()
            if self._reply is None or self._reply[0] is not connection:
                name = connection.temporary_queue()
                self._reply = (connection, Destination(DestinationKind.QUEUE, name))
            return self._reply

    def _jms_ready(self) -> None:
        try:
            self._reply_queue()
        except JmsError as error:  # the sender waits it out, within the patience
            log.warning("the NATS service cannot reach JMS yet: %s", error)

    def _drop_jms(self) -> None:
        self.jms.recover(None)

    def _count(self, route: Route | None, what: str) -> None:
        with self._counts_lock:
            counts = self._counts.setdefault(UNROUTED if route is None else route.name, NatsCounts())
            setattr(counts, what, getattr(counts, what) + 1)

    def close(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        self._draining.set()
        self.nats.close()
        # What it took after its last task and no later task of this process took from it (the next NATS
        # task ran in another process): not in the metrics, so said here, once.
        for route, late in sorted(self.unreported().items()):
            if late != NatsCounts():
                log.warning("nats counts no task reported %s", json.dumps({"route": route, **asdict(late)}))
        try:
            self.jms.close()
        except JmsError as error:
            log.debug("closing the NATS service's JMS connection: %s", error)


def _header_text(text: str) -> str:
    """One line of NATS header text."""
    return " ".join(text.split())[:512]
