"""The Python API: ``record()`` and its report, ``analyse``, ``forecast()``, the notebook magics
(``notebook``) and the pytest plugin (``pytest_plugin``).

``record`` records a block or a function (``recording.py``), ``RecompileReport`` is its analysed
report with its gate and DataFrames (``report.py``), and ``forecast`` predicts the compiles of a
list of calls without running them (``forecast.py``). ``import recompile_cli`` re-exports the
public names lazily; this package is what they resolve to.
"""

from recompile_cli.api.recording import Recording, analyse, record
from recompile_cli.api.report import Frames, RecompileReport, compile_limits, gated, to_pandas
from recompile_cli.session.files import load_session, save_session

__all__ = ["Frames", "RecompileReport", "Recording", "analyse", "compile_limits", "gated",
           "load_session", "record", "save_session", "to_pandas"]
