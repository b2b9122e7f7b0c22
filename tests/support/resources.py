"""Fresh, uniquely named resources on an emulator, shaped as the template shapes them."""

from __future__ import annotations

import uuid
from typing import Any

from tidelog.local.stack import create_table
from tidelog.local.template import Template


def new_table(client: Any, template: Template) -> str:
    (spec,) = template.tables()
    name = f"t-{uuid.uuid4().hex[:12]}"
    create_table(client, name, spec.properties)
    return name


def new_bucket(client: Any) -> str:
    name = f"b-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    return name
