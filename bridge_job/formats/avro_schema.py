"""The Avro schemas of the connectors' record (formats/connect_jms.py): what formats/avro.py writes and the
registry holds. Plain JSON documents, without fastavro, so that the operator's checks (which register
them) need no Avro library.

They are what Confluent's AvroConverter derives from the connectors' Connect schemas: records named by
namespace and name with `connect.name`, int8 and int16 as `int` with `connect.type`, an optional field as
the union ["null", T] with a null default, a map of PropertyValue records as an Avro map.
"""

from __future__ import annotations

import json
from typing import Any

from bridge_job.formats.connect_jms import KEY_NAME, RECORDS, VALUE_NAME

_PRIMITIVES: dict[str, Any] = {
    "string": "string",
    "boolean": "boolean",
    "bytes": "bytes",
    "int8": {"type": "int", "connect.type": "int8"},
    "int16": {"type": "int", "connect.type": "int16"},
    "int32": "int",
    "int64": "long",
    "float32": "float",
    "float64": "double",
}


def schema(record: str) -> dict[str, Any]:
    """The Avro schema of one of the shape's records (VALUE_NAME, KEY_NAME), as a JSON document."""
    defined: set[str] = set()

    def avro_type(connect_type: str) -> Any:
        if connect_type in _PRIMITIVES:
            return _PRIMITIVES[connect_type]
        if connect_type.startswith("map:"):
            return {"type": "map", "values": avro_type(connect_type[4:])}
        if connect_type.startswith("array:"):
            return {"type": "array", "items": avro_type(connect_type[6:])}
        if connect_type in defined:  # Avro names a record once, then refers to it by name
            return connect_type
        defined.add(connect_type)
        namespace, _, name = connect_type.rpartition(".")
        fields = []
        for field in RECORDS[connect_type]:
            written = avro_type(field.type)
            if field.optional:
                fields.append({"name": field.name, "type": ["null", written], "default": None})
            else:
                fields.append({"name": field.name, "type": written})
        return {
            "type": "record",
            "name": name,
            "namespace": namespace,
            "fields": fields,
            "connect.name": connect_type,
        }

    document: dict[str, Any] = avro_type(record)
    return document


VALUE_SCHEMA = json.dumps(schema(VALUE_NAME), separators=(",", ":"))
KEY_SCHEMA = json.dumps(schema(KEY_NAME), separators=(",", ":"))
