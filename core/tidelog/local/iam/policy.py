"""IAM's evaluation of identity-based policies, for the statements tidelog's templates write.

What a request asks is one or more :class:`Call` s: an action (``dynamodb:Query``), the resource's
ARN and the request's condition keys (``dynamodb:LeadingKeys``, ``s3:prefix``). A role allows a
call when a statement allows it and none denies it, as IAM decides within one account. The
evaluation follows IAM's documented rules, including the surprising ones: actions match without
regard to case, resources with it; ``ForAllValues`` holds for a key the request lacks (so a policy
on ``dynamodb:LeadingKeys`` alone does not restrict a Scan); ``ForAnyValue`` fails for one.

A policy element this module cannot evaluate (``NotAction``, an operator it does not know) is
refused when the policy is read, naming it, rather than taken to allow or deny.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any


class PolicyError(ValueError):
    """A policy holds something this evaluation does not know."""


@dataclass(frozen=True)
class Call:
    """One action on one resource, with the request's condition keys (lists: a key may hold
    several values, as ``dynamodb:LeadingKeys`` does for a batch)."""

    action: str
    resource: str
    context: Mapping[str, Sequence[str]] = field(default_factory=dict)


@cache
def _glob(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    """IAM's wildcards: ``*`` any run of characters, ``?`` any one; nothing else is special."""
    return re.compile(fnmatch.translate(pattern), re.IGNORECASE if ignore_case else 0)


def _like(pattern: str, value: str) -> bool:
    return _glob(pattern, False).match(value) is not None


def _equals(expected: str, value: str) -> bool:
    return expected == value


def _equals_ignore_case(expected: str, value: str) -> bool:
    return expected.lower() == value.lower()


_OPERATORS: dict[str, tuple[Callable[[str, str], bool], bool]] = {
    # name: (does one expected value match one value, is the operator negated)
    "StringEquals": (_equals, False),
    "StringNotEquals": (_equals, True),
    "StringEqualsIgnoreCase": (_equals_ignore_case, False),
    "StringNotEqualsIgnoreCase": (_equals_ignore_case, True),
    "StringLike": (_like, False),
    "StringNotLike": (_like, True),
    "ArnEquals": (_like, False),  # IAM lets ArnEquals take wildcards too
    "ArnLike": (_like, False),
    "ArnNotEquals": (_like, True),
    "ArnNotLike": (_like, True),
}


@dataclass(frozen=True)
class Condition:
    """One operator on one key: ``ForAllValues:StringLike: {dynamodb:LeadingKeys: [...]}``."""

    qualifier: str  # "", "ForAllValues" or "ForAnyValue"
    operator: str
    if_exists: bool
    key: str
    expected: tuple[str, ...]

    @classmethod
    def parse(cls, name: str, key: str, expected: Any) -> Condition:
        qualifier, _, operator = name.rpartition(":")
        if qualifier not in ("", "ForAllValues", "ForAnyValue"):
            raise PolicyError(f"condition qualifier {qualifier!r} is not evaluated locally")
        if_exists = operator.endswith("IfExists")
        operator = operator.removesuffix("IfExists")
        if operator not in _OPERATORS:
            raise PolicyError(f"condition operator {operator!r} is not evaluated locally")
        values = expected if isinstance(expected, list) else [expected]
        return cls(qualifier, operator, if_exists, key, tuple(str(v) for v in values))

    def holds(self, context: Mapping[str, Sequence[str]]) -> bool:
        match, negated = _OPERATORS[self.operator]
        values = context.get(self.key)

        def one(value: str) -> bool:
            matched = any(match(expected, value) for expected in self.expected)
            return matched != negated

        if self.qualifier == "ForAllValues":
            return all(one(v) for v in values or ())
        if self.qualifier == "ForAnyValue":
            return any(one(v) for v in values or ())
        if values is None:
            return self.if_exists or negated
        return any(one(v) for v in values)


def _strings(value: Any, element: str) -> tuple[str, ...]:
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, str) for v in values):
        raise PolicyError(f"{element} must be a string or a list of strings, not {value!r}")
    return tuple(values)


@dataclass(frozen=True)
class Statement:
    effect: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    conditions: tuple[Condition, ...] = ()
    sid: str = ""

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Statement:
        unknown = set(raw) - {"Sid", "Effect", "Action", "Resource", "Condition"}
        if unknown:
            raise PolicyError(f"statement elements {sorted(unknown)} are not evaluated locally")
        effect = raw.get("Effect")
        if effect not in ("Allow", "Deny"):
            raise PolicyError(f"a statement's Effect is Allow or Deny, not {effect!r}")
        conditions = tuple(
            Condition.parse(operator, key, expected)
            for operator, keys in (raw.get("Condition") or {}).items()
            for key, expected in keys.items()
        )
        return cls(
            effect,
            _strings(raw.get("Action"), "Action"),
            _strings(raw.get("Resource"), "Resource"),
            conditions,
            str(raw.get("Sid", "")),
        )

    def applies(self, call: Call) -> bool:
        return (
            any(_glob(a, True).match(call.action) for a in self.actions)
            and any(_like(r, call.resource) for r in self.resources)
            and all(c.holds(call.context) for c in self.conditions)
        )


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str  # IAM's wording: why a call was refused ("" when allowed)


ALLOWED = Decision(True, "")


@dataclass(frozen=True)
class Policy:
    """Every statement of a role's identity-based policies."""

    statements: tuple[Statement, ...]

    @classmethod
    def parse(cls, documents: Sequence[Mapping[str, Any]]) -> Policy:
        statements: list[Statement] = []
        for document in documents:
            raw = document.get("Statement", [])
            for statement in raw if isinstance(raw, list) else [raw]:
                statements.append(Statement.parse(statement))
        return cls(tuple(statements))

    def decide(self, call: Call) -> Decision:
        applying = [s for s in self.statements if s.applies(call)]
        if any(s.effect == "Deny" for s in applying):
            return Decision(False, "with an explicit deny in an identity-based policy")
        if applying:
            return ALLOWED
        return Decision(False, f"because no identity-based policy allows the {call.action} action")
