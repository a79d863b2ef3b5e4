"""Fixtures of the experiment tests."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def scipy_stats() -> Any:
    """``scipy.stats``, imported by the first test that needs it: at the top of a file, its 1.3 s would be paid
    by every worker that collects the file."""
    from scipy import stats

    return stats
