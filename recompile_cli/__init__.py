"""recompile-cli: a recompilation profiler for JAX.

Capture (``Recorder``) -> frozen ``Session`` -> ``analyse`` -> renderers and gates.
"""

from __future__ import annotations

from recompile_cli.session.model import Session

__version__ = "0.1.0"
__all__ = ["Session", "__version__"]
