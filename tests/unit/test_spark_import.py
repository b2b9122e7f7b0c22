"""Without the spark extra, importing tidelog.spark says what to install."""

from __future__ import annotations

import importlib
import sys

import pytest


def test_a_clear_import_error_without_pyspark(monkeypatch):
    for name in [m for m in sys.modules if m == "tidelog.spark" or m.startswith("tidelog.spark.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(ImportError, match=r"pip install 'tidelog\[spark\]'"):
        importlib.import_module("tidelog.spark")
