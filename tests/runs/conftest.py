"""Fixtures of the in-process lifecycle tests (``lifecycle_harness``): a fake clock and the
gates a test opens."""

from __future__ import annotations

import pytest

from fawn.testing.clock import FakeClock
from tests.runs.lifecycle_harness import Gates


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def gates() -> Gates:
    return Gates()
