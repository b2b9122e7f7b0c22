"""IAM enforced by the embedded emulator, as AWS enforces each function's role.

moto evaluates no resource, no condition and no DynamoDB key, and the functions of ``tidelog
dev`` share one process and its clients. So each call names the roles it is made for, in a
header (``x-tidelog-principal``, added by :mod:`tidelog.aws` from the caller's context), and the
emulator checks it against those roles' statements from the templates before moto sees it: a
call without a role's permission is refused with AWS's AccessDenied, naming the action, the
resource and the role. A call naming no role is the user's own (the test harness, the CLI) and
is not checked, as an administrator's would pass.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

from tidelog.aws import PRINCIPAL_HEADER
from tidelog.local.iam.calls import UNNAMED, Account, Request, calls, needs_body
from tidelog.local.iam.policy import Call, Decision, Policy

_ENVIRON_KEY = "HTTP_" + PRINCIPAL_HEADER.upper().replace("-", "_")


MEMO_SIZE = 65_536


@dataclass(frozen=True)
class Refusal:
    principal: str
    call: Call
    reason: str

    @property
    def message(self) -> str:
        if self.call.action == UNNAMED:
            return f"the local IAM check names no action for this request by {self.principal}"
        return (
            f"User: {self.principal} is not authorized to perform: {self.call.action} "
            f"on resource: {self.call.resource} {self.reason}"
        )


class Enforcer:
    def __init__(self, account: Account, policies: Mapping[str, Policy]) -> None:
        self._account = account
        self._policies = policies
        # Decisions by role and call: a stack asks the same few thousand again and again.
        self._decided: dict[tuple[Any, ...], Decision] = {}

    def refusal(self, principals: Iterable[str], request: Request) -> Refusal | None:
        """Why a call made for ``principals`` is refused (every one must be allowed), or None."""
        asked = calls(request, self._account)
        for principal in principals:
            policy = self._policies.get(principal)
            for call in asked:
                if policy is None:
                    return Refusal(principal, call, "because the local stack knows no such role")
                if call.action == UNNAMED:  # even an Action "*" cannot allow what is unnamed
                    return Refusal(principal, call, "")
                decision = self._decide(principal, policy, call)
                if not decision.allowed:
                    return Refusal(principal, call, decision.reason)
        return None

    def _decide(self, principal: str, policy: Policy, call: Call) -> Decision:
        key = (principal, call.action, call.resource, *((k, *v) for k, v in call.context.items()))
        decision = self._decided.get(key)
        if decision is None:
            if len(self._decided) >= MEMO_SIZE:
                self._decided.clear()
            decision = self._decided[key] = policy.decide(call)
        return decision

    def check(self, environ: dict[str, Any]) -> Refusal | None:
        """The WSGI request's refusal, or None; a body read here is put back for moto."""
        named = environ.get(_ENVIRON_KEY)
        if not named:
            return None
        headers = {
            key[5:].replace("_", "-").lower(): str(value)
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        method, query = str(environ["REQUEST_METHOD"]), str(environ.get("QUERY_STRING", ""))
        body = b""
        length = str(environ.get("CONTENT_LENGTH") or "")
        if length.isdigit() and needs_body(method, headers, query):
            body = environ["wsgi.input"].read(int(length))
            environ["wsgi.input"] = io.BytesIO(body)
        request = Request(method, str(environ.get("PATH_INFO", "")), query, headers, body)
        return self.refusal(str(named).split(","), request)


def access_denied(
    refusal: Refusal, environ: Mapping[str, Any], start: Callable[..., Any]
) -> list[bytes]:
    """AWS's answer to a refused call, in the service's own protocol."""
    target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
    if target:  # the JSON protocols: DynamoDB, Step Functions
        kind = (
            "com.amazon.coral.service#AccessDeniedException"
            if target.startswith("DynamoDB_")
            else "AccessDeniedException"
        )
        body = json.dumps({"__type": kind, "message": refusal.message}).encode()
        start(
            "400 Bad Request",
            [("Content-Type", "application/x-amz-json-1.0"), ("Content-Length", str(len(body)))],
        )
        return [body]
    if "/lambda/" in str(environ.get("HTTP_AUTHORIZATION", "")):  # REST-JSON
        body = json.dumps({"Type": "User", "message": refusal.message}).encode()
        start(
            "403 Forbidden",
            [
                ("Content-Type", "application/json"),
                ("x-amzn-ErrorType", "AccessDeniedException"),
                ("Content-Length", str(len(body))),
            ],
        )
        return [body]
    message = escape(refusal.message)
    if "/s3/" in str(environ.get("HTTP_AUTHORIZATION", "")):
        xml = f"<Error><Code>AccessDenied</Code><Message>{message}</Message></Error>"
    else:
        xml = (
            "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>"
            f"<Message>{message}</Message></Error></ErrorResponse>"
        )
    body = ('<?xml version="1.0" encoding="UTF-8"?>' + xml).encode()
    start(
        "403 Forbidden", [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))]
    )
    return [body]
