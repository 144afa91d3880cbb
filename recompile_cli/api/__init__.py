"""The Python API, which ``import recompile_cli`` re-exports lazily: it wires capture, analysis,
renderers and gates for Python, pytest and notebooks, and owns no analysis of its own.

Map: ``recording.py`` (``record()``, ``analyse``), ``report.py`` (``RecompileReport``, its gate,
``to_pandas``), ``forecast.py`` (compiles of a list of calls, traced, not run), ``notebook.py``
(the ``%recompiles`` magics), ``pytest_plugin.py`` (the ``max_compiles`` marker and fixture).

The pytest plugin loads in every pytest session and imports this package: importing it must not
import JAX, pandas, IPython, or the analysis, gate, guards and capture modules (local imports).
"""

from recompile_cli.api.recording import Recording, analyse, record
from recompile_cli.api.report import Frames, RecompileReport, compile_limits, gated, to_pandas
from recompile_cli.session.files import load_session, save_session

__all__ = ["Frames", "RecompileReport", "Recording", "analyse", "compile_limits", "gated",
           "load_session", "record", "save_session", "to_pandas"]
