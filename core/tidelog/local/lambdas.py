"""Runs the template's functions in this process, the way Lambda runs them.

Each function gets a pool of execution environments. An environment is a fresh import of the
handler module (its own module-level state, its own cold start) that serves one invocation at a
time; concurrent invocations get more environments. That is Lambda's contract, and it matters:
handler state such as Powertools' resolver (which keeps the current event on the instance) is not
safe to share between concurrent requests.

:func:`install_moto_invoke_hook` makes moto's Lambda ``Invoke`` (used by Step Functions tasks)
run these environments instead of Docker containers.

An invocation runs in its function's role (``principal``, a role ARN): the AWS calls it makes
name that role, and the emulator holds them to its policies (:mod:`tidelog.local.iam`).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from tidelog import principals
from tidelog.local.template import FunctionSpec

Handler = Callable[[Any, Any], Any]


@dataclass
class LambdaContext:
    """The context object a Python handler receives (the attributes Powertools reads)."""

    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int
    timeout_s: int
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = ""
    log_stream_name: str = "local"
    _deadline: float = 0.0

    def __post_init__(self) -> None:
        self.log_group_name = self.log_group_name or f"/aws/lambda/{self.function_name}"
        self._deadline = time.monotonic() + self.timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class FunctionRuntime:
    """One function's pool of execution environments."""

    def __init__(
        self, spec: FunctionSpec, arn: str, *, principal: str = "", max_environments: int = 32
    ) -> None:
        _isolate_powertools_resolvers()
        self.spec = spec
        self.arn = arn
        self.principal = principal
        self._idle: list[Handler] = []
        self._created = 0
        self._max = max_environments
        self._available = threading.Condition()

    @property
    def environments(self) -> int:
        return self._created

    def invoke(self, event: Any) -> Any:
        """Run the handler on ``event``; its exceptions propagate, as Lambda reports them."""
        with principals.acting_as(frozenset({self.principal} if self.principal else ())):
            return self._invoke(event)

    def _invoke(self, event: Any) -> Any:
        handler = self._acquire()
        try:
            context = LambdaContext(
                self.spec.name, self.arn, self.spec.memory_mb, self.spec.timeout_s
            )
            return handler(event, context)
        finally:
            with self._available:
                self._idle.append(handler)
                self._available.notify()

    def _acquire(self) -> Handler:
        with self._available:
            while not self._idle and self._created >= self._max:
                self._available.wait()
            if self._idle:
                return self._idle.pop()
            self._created += 1
        try:
            return self._cold_start()
        except BaseException:
            with self._available:
                self._created -= 1
                self._available.notify()
            raise

    def _cold_start(self) -> Handler:
        module = load_module(self.spec)
        handler: Handler = getattr(module, self.spec.handler.rpartition(".")[2])
        return handler


_serial = itertools.count()


def load_module(spec: FunctionSpec) -> ModuleType:
    """A fresh import of the function's handler module, as a new Lambda environment makes."""
    module_path = spec.handler.rpartition(".")[0]
    source = spec.code_dir / (module_path.replace(".", "/") + ".py")
    name = f"_tidelog_fn_{spec.logical_id}_{next(_serial)}"
    module_spec = importlib.util.spec_from_file_location(name, source)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"cannot load handler module {source}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # type hints of the handler's models resolve through it
    module_spec.loader.exec_module(module)
    return module


_isolated = False


def _isolate_powertools_resolvers() -> None:
    """Keep each environment's current event its own.

    Powertools' resolver stores the event it is resolving on the class (``BaseRouter``), which
    is safe in Lambda, where a process serves one invocation at a time, but not here, where
    environments share the library and serve requests concurrently: one request would read
    another's path, query and body. Setting the event on the resolver instance first shadows the
    class attribute for everything that reads it through the app, and an environment (one app)
    serves one invocation at a time. tests/functional/test_produce_api.py proves it under load.
    """
    global _isolated  # noqa: PLW0603 - a one-time patch of a library class
    if _isolated:
        return
    from aws_lambda_powertools.event_handler.api_gateway import (  # noqa: PLC0415
        ApiGatewayResolver,
    )

    original = ApiGatewayResolver.resolve

    def resolve(self: Any, event: Any, context: Any) -> Any:
        self.current_event = self._to_proxy_event(event)
        self.lambda_context = context
        return original(self, event, context)

    setattr(ApiGatewayResolver, "resolve", resolve)  # noqa: B010 - a patch, on purpose
    _isolated = True


def invoke_as_lambda(runtime: FunctionRuntime, event: Any) -> tuple[str, bool]:
    """Lambda's Invoke result: the JSON payload, and whether the function errored."""
    try:
        return json.dumps(runtime.invoke(event)), False
    except Exception as exc:  # noqa: BLE001 - Lambda reports any error to its caller
        return json.dumps(
            {
                "errorMessage": str(exc),
                "errorType": type(exc).__name__,
                "stackTrace": traceback.format_tb(exc.__traceback__),
            }
        ), True


_hooked: MutableMapping[str, FunctionRuntime] = {}


def install_moto_invoke_hook(runtimes: MutableMapping[str, FunctionRuntime]) -> None:
    """Route moto's Lambda invocations of the named functions to ``runtimes`` (by name)."""
    from moto.awslambda.models import LambdaFunction  # noqa: PLC0415 - the local extra only

    _hooked.update(runtimes)
    if getattr(LambdaFunction, "_tidelog_hooked", False):
        return
    original = LambdaFunction._invoke_lambda

    def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
        runtime = _hooked.get(self.function_name)
        if runtime is None:
            result: tuple[str, bool, str] = original(self, event)
            return result
        if event is None or event == "{}":
            event = {}
        payload, errored = invoke_as_lambda(runtime, event)
        return payload, errored, ""

    setattr(LambdaFunction, "_invoke_lambda", _invoke_lambda)  # noqa: B010 - a patch, on purpose
    setattr(LambdaFunction, "_tidelog_hooked", True)  # noqa: B010
