"""Who a connection is: Kafka's principals, and the mapping from a client certificate's subject
to a principal name (``ssl.principal.mapping.rules``, Kafka's ``SslPrincipalMapper``).

The rules are Kafka's, so a broker's setting works here unchanged::

    RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT

Each rule is tried in turn on the subject's distinguished name (RFC 2253, as Java's
``X500Principal.getName()`` writes it): ``RULE:pattern/replacement/`` applies where the pattern
matches the whole name, with ``$n`` for its groups, and an ``L`` or ``U`` after the last slash
lower- or upper-cases the result; ``DEFAULT`` is the name itself. No rule applying is an error:
the connection is refused, as Kafka refuses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tidelog.errors import InvalidRequestError

USER = "User"
ANONYMOUS = f"{USER}:ANONYMOUS"  # a connection that has not said who it is (Kafka's name)
DEFAULT_RULES = "DEFAULT"

_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)
_BACK_REFERENCE = re.compile(r"\$(\d+)")


class PrincipalMappingError(InvalidRequestError):
    """Rules that do not parse, or a name no rule applies to."""


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None = None  # None: DEFAULT
    replacement: str = ""
    case: str = ""  # "L", "U" or ""

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        match = self.pattern.fullmatch(name)
        if match is None:
            return None
        groups = self.pattern.groups
        result = self.pattern.sub(lambda m: _replace(self.replacement, m, groups), name)
        if self.case:
            return result.lower() if self.case == "L" else result.upper()
        return result

    def __str__(self) -> str:
        if self.pattern is None:
            return "DEFAULT"
        return f"RULE:{self.pattern.pattern}/{self.replacement}" + (
            f"/{self.case}" if self.case else ""
        )


class PrincipalMapper:
    """``ssl.principal.mapping.rules``, parsed once."""

    def __init__(self, rules: str | None = DEFAULT_RULES) -> None:
        parsed = [_parse(r) for r in _split(DEFAULT_RULES if rules is None else rules)]
        self.rules = [r for r in parsed if r is not None]

    def name(self, distinguished_name: str) -> str:
        for rule in self.rules:
            found = rule.apply(distinguished_name)
            if found is not None:
                return found
        raise PrincipalMappingError(
            f"no ssl.principal.mapping.rules rule applies to {distinguished_name!r}"
        )

    def __str__(self) -> str:
        return f"SslPrincipalMapper(rules = [{', '.join(map(str, self.rules))}])"


def _split(rules: str) -> list[str]:
    return [m.group(1) for m in _SPLITTER.finditer(rules.strip())]


def _parse(rule: str) -> _Rule | None:
    match = _PARSER.match(rule)
    if match is None or match.end() != len(rule):
        unmatched = rule[match.end() :] if match is not None else rule
        raise PrincipalMappingError(f"invalid rule {rule!r}: unmatched {unmatched!r}")
    if match.group(1) is not None:
        return _Rule()
    if match.group(2) is None:
        return None  # empty rules are ignored
    try:
        pattern = re.compile(match.group(2))
    except re.error as exc:
        raise PrincipalMappingError(f"invalid rule {rule!r}: {exc}") from exc
    return _Rule(pattern, match.group(4), match.group(6))


def _replace(replacement: str, match: re.Match[str], groups: int) -> str:
    """Java's replacement syntax, as Kafka feeds it to ``replaceAll``: ``$n`` is group n, the
    longest number that names a group; a first digit naming no group is literal text, as
    Kafka escapes it; a backslash takes the next character literally."""
    out: list[str] = []
    i = 0
    while i < len(replacement):
        char = replacement[i]
        if char == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1])
            i += 2
            continue
        reference = _BACK_REFERENCE.match(replacement, i) if char == "$" else None
        if reference is None:
            out.append(char)
            i += 1
            continue
        digits = reference.group(1)
        if not digits.startswith("0") and _named_group(int(digits), groups) > groups:
            out.append(reference.group(0))  # no such group: literal, as Kafka escapes it
            i = reference.end()
            continue
        number, used = int(digits[0]), 1
        while used < len(digits) and number * 10 + int(digits[used]) <= groups:
            number, used = number * 10 + int(digits[used]), used + 1
        out.append(match.group(number) or "")
        i += 1 + used
    return "".join(out)


def _named_group(number: int, groups: int) -> int:
    while number > groups and number >= 10:
        number //= 10
    return number
