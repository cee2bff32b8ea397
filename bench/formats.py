"""Conversion throughput of every message format, both directions (not a test).

    python bench/formats.py [--messages 100000]

Prints one JSON line: messages per second for each format's encode (JMS -> Kafka record) and decode
(record -> JMS), and the same for a baseline measured in the same run (`json.dumps` of the body alone,
about the least a conversion can do), with each figure's ratio to the baseline. The messages are typical
bridge traffic: a 1,000-character text body, message and correlation ids, a timestamp and five properties
of different types.

The schema-registry formats (`avro`, `jsonSchema`) are measured the same way, with their schema ids
given (the registry is asked once per topic, not per message). `message_build` is the floor any decode
stands on: making the JmsMessage and its five typed properties from values at hand.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable, Sequence
from typing import Any

from bridge_job.config import Format
from bridge_job.formats import KafkaRecord, avro, json_schema
from bridge_job.formats.codecs import Codec, codec
from bridge_job.formats.registry_wire import SchemaIds
from bridge_job.message import Destination, JmsMessage, Property, PropertyType

POOL = 1000  # distinct messages, cycled: enough to defeat caches, small enough to stay in memory
DESTINATION = Destination.parse("queue://orders.in")


def sample(index: int) -> JmsMessage:
    return JmsMessage(
        DESTINATION,
        body=f"order {index:08d} " + "x" * 985,
        message_id=f"ID:bridge-{index}",
        correlation_id=f"corr-{index % 97}",
        type="order",
        timestamp=1_700_000_000_000 + index,
        properties={
            "region": Property.string("emea"),
            "quantity": Property(PropertyType.INT, index % 1000),
            "customer": Property(PropertyType.LONG, 10_000_000_000 + index),
            "price": Property(PropertyType.DOUBLE, index / 7),
            "express": Property(PropertyType.BOOLEAN, index % 2 == 0),
        },
    )


def rate(count: int, convert: Callable[[Any], object], inputs: Sequence[Any]) -> float:
    pool = len(inputs)
    start = time.perf_counter()
    for index in range(count):
        convert(inputs[index % pool])
    return count / (time.perf_counter() - start)


def registry_directions(
    fmt: Any,
) -> tuple[Callable[[JmsMessage], KafkaRecord], Callable[[KafkaRecord], JmsMessage]]:
    ids = SchemaIds(key=1, value=2)
    schema: str = fmt.VALUE_SCHEMA

    def schemas(schema_id: int) -> str:
        return schema

    return (lambda m: fmt.encode(m, "orders", ids)), (lambda r: fmt.decode(r, DESTINATION, schemas))


def rebuilt(message: JmsMessage) -> JmsMessage:
    return JmsMessage(
        message.destination,
        body=message.body,
        message_id=message.message_id,
        correlation_id=message.correlation_id,
        type=message.type,
        timestamp=message.timestamp,
        properties={name: Property(p.type, p.value) for name, p in message.properties.items()},
    )


def directions(c: Codec) -> tuple[Callable[[JmsMessage], KafkaRecord], Callable[[KafkaRecord], JmsMessage]]:
    return (lambda m: c.encode(m, "orders")), (lambda r: c.decode(r, DESTINATION))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=100_000)
    count = parser.parse_args().messages

    messages = [sample(index) for index in range(POOL)]
    baseline = rate(count, lambda m: json.dumps(m.body).encode(), messages)
    formats: dict[str, dict[str, dict[str, float]]] = {}
    all_directions = {fmt.value: directions(codec(fmt)) for fmt in Format if not fmt.registered}
    all_directions |= {"avro": registry_directions(avro), "jsonSchema": registry_directions(json_schema)}
    for name, (to_kafka, to_jms) in all_directions.items():
        records = [to_kafka(m) for m in messages]
        encode = rate(count, to_kafka, messages)
        decode = rate(count, to_jms, records)
        formats[name] = {
            "encode": {"msg_per_s": round(encode), "vs_baseline": round(encode / baseline, 3)},
            "decode": {"msg_per_s": round(decode), "vs_baseline": round(decode / baseline, 3)},
        }
    build = rate(count, rebuilt, messages)
    result = {
        "messages": count,
        "message_build": {"msg_per_s": round(build), "vs_baseline": round(build / baseline, 3)},
        "python": platform.python_version(),
        "baseline": {"what": "json.dumps(body).encode()", "msg_per_s": round(baseline)},
        "formats": formats,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
