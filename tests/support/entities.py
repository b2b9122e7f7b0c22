"""Requests built from Kafka's schemas (kio's entities) with one of everything: every array
holds one element, every nullable entity a value, every string ``text``. Each array length and
each named resource of a schema appears in such an entity."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from typing import Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
)
from kio.static.primitive import Records


def one_of_everything(entity_type: type, text: str = "s") -> Any:
    values: dict[str, Any] = {}
    for field in dataclasses.fields(entity_type):
        kind = classify_field(field)
        if isinstance(kind, EntityTupleField):
            values[field.name] = (one_of_everything(kind.type_, text),)
        elif isinstance(kind, EntityField):
            values[field.name] = one_of_everything(kind.type_, text)
        else:
            value = _primitive(field.metadata["kafka_type"], kind.type_, text)
            values[field.name] = (value,) if isinstance(kind, PrimitiveTupleField) else value
    return entity_type(**values)


def _primitive(kafka_type: str, python_type: type, text: str) -> Any:
    simple: dict[str, Any] = {
        "bool": True,
        "uuid": uuid.UUID(int=7),
        "records": Records(b"r"),
        "bytes": b"b",
        "timedelta_i32": datetime.timedelta(milliseconds=7),
        "timedelta_i64": datetime.timedelta(milliseconds=7),
    }
    if kafka_type in simple:
        return simple[kafka_type]
    if kafka_type == "string":
        return python_type(text)
    return python_type(1.5 if kafka_type == "float64" else 1)
