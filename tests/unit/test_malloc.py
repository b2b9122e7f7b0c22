"""glibc's arenas capped for the long-running hosts (tidelog.malloc)."""

from __future__ import annotations

import ctypes.util
import platform

import pytest

from tidelog import malloc


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="only glibc has arenas to cap")
def test_glibc_takes_the_cap():
    assert malloc.limit_arenas() is True


def test_without_a_c_library_to_tune_nothing_happens(monkeypatch):
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    assert malloc.limit_arenas() is False
