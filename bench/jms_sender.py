"""Load generator for bench/egress.py: sends 1 KB persistent JMS text messages to one queue.

Runs as its own process so that its CPU (JPype, the ActiveMQ client) is accounted apart from the path
under test. Protocol on stdout (everything else goes to stderr):

    BENCH ready                 connected, producer open: the JVM start-up is behind us
    (waits for a line on stdin: the go signal)
    BENCH {"first_send": ..., "last_send": ..., "sent": N}    wall-clock times (time.time()), at the end

Each message carries the int property `seq` (`--seq-base` + i) and the string property `run`, so the
consumer of the destination topic can count distinct records and ignore those of other phases; the JMS
client sets JMSTimestamp at send, which the latency figures are measured from.

- full speed (`--rate 0`): a transacted session, committed every `--commit-every` messages and at the end;
- paced (`--rate R`): message i is sent at start + i/R (back to back when behind); with `--commit-every 0`
  an auto-acknowledged session, so each message is visible to consumers as soon as it is sent. A
  persistent send waits for the broker's store (ActiveMQ: about 800/s from one producer); with
  `--async-send` it does not (the message is still persistent), so the pace holds at higher rates.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bridge_job.config import ConnectionFactorySpec, JmsSource, JmsSpec
from bridge_job.jms import JmsConnection
from bridge_job.message import DeliveryMode, Destination, DestinationKind, JmsMessage, Property
from jmsbridge.local import activemq_classpath

BODY = "x" * 1024


def say(line: str) -> None:
    sys.stdout.write(f"BENCH {line}\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the ActiveMQ broker URL")
    parser.add_argument("--queue", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--rate", type=float, default=0.0, help="messages per second; 0 = full speed")
    parser.add_argument("--commit-every", type=int, default=250, help="0 = not transacted")
    parser.add_argument("--run", default="bench", help="value of the `run` property")
    parser.add_argument("--seq-base", type=int, default=0)
    parser.add_argument(
        "--async-send", action="store_true", help="ActiveMQ's jms.useAsyncSend: do not wait for the store"
    )
    args = parser.parse_args()
    url = f"{args.url}{'&' if '?' in args.url else '?'}jms.useAsyncSend=true" if args.async_send else args.url

    spec = JmsSpec(
        connection_factory=ConnectionFactorySpec(
            class_name="org.apache.activemq.ActiveMQConnectionFactory", properties={"brokerURL": url}
        ),
        sources=[JmsSource(queue="unused")],  # a JmsSpec needs one; this connection only sends
    )
    destination = Destination(DestinationKind.QUEUE, args.queue)
    transacted = args.commit_every > 0
    run = Property.string(args.run)
    client_id = f"bench-sender-{args.run}"
    with (
        JmsConnection(spec, classpath=activemq_classpath(), client_id=client_id) as connection,
        connection.producer(transacted=transacted) as producer,
    ):
        say("ready")
        if not sys.stdin.readline():
            return  # the benchmark went away before the go signal
        first_send = time.time()
        began = time.monotonic()
        for i in range(args.count):
            if args.rate > 0:
                delay = began + i / args.rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            message = JmsMessage(
                destination,
                body=BODY,
                delivery_mode=DeliveryMode.PERSISTENT,
                properties={"seq": Property.of(args.seq_base + i), "run": run},
            )
            producer.send(message)
            if transacted and (i + 1) % args.commit_every == 0:
                producer.commit()
        if transacted:
            producer.commit()
        last_send = time.time()
    say(json.dumps({"first_send": first_send, "last_send": last_send, "sent": args.count}))


if __name__ == "__main__":
    main()
