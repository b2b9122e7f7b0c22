"""A function's handler module loaded in the test process, for the answer models it declares
(answers put together by hand are checked against them)."""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


@cache
def function_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"{name}_models", ROOT / f"functions/{name}/app.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # for pydantic to resolve the models' annotations
    spec.loader.exec_module(module)
    return module
