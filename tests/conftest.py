"""Shared test fixtures: where the real captures live, and the skip policy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("FABTOP_FIXTURES", REPO.parent / "shared" / "fixtures"))
IN_CI = os.environ.get("CI", "").lower() == "true"


def skip_or_fail(reason: str) -> None:
    """Skip on a developer's laptop; in CI a missing prerequisite is a failure."""
    if IN_CI:
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """The real captures in ../shared/fixtures (see its SOURCES.md)."""
    if not FIXTURES.is_dir():
        skip_or_fail(f"real captures not found at {FIXTURES}")
    return FIXTURES
