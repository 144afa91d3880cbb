"""The unit layer: hand-built sessions, spec and budget files, renderers; no JAX, no CLI.

``python -m pytest tests/unit`` runs this layer alone, in a few seconds. Then every test checks
that JAX is still not imported (by collection or by the test itself), and the slow property test
runs fewer examples (``unit_layer_alone``); a run with the other layers (``python -m pytest``)
runs them all.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def unit_layer_alone(request: pytest.FixtureRequest) -> bool:
    """Whether this run holds unit tests only (``pytest tests/unit``, or a part of it)."""
    return all(UNIT in item.path.parents for item in request.session.items)


_imported_by: list[str] = []  # the unit test that imported JAX, once one has


@pytest.fixture(autouse=True)
def jax_is_not_imported(request: pytest.FixtureRequest, unit_layer_alone: bool):
    """Fails a unit test that finds JAX imported, or imports it (the first such test only: the
    later ones cannot be checked). Only when the unit layer runs alone: the other layers may
    import JAX as soon as they are collected."""
    if not unit_layer_alone or _imported_by:
        yield
        return
    assert "jax" not in sys.modules, "collecting the unit tests imported JAX"
    yield
    if "jax" in sys.modules:
        _imported_by.append(request.node.nodeid)
        pytest.fail(f"{request.node.nodeid} imported JAX: it belongs in tests/integration",
                    pytrace=False)
