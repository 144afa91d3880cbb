"""The measured process of ``recompile-cli run SCRIPT`` alone, without its supervisor
(benchmarks/run.py, fixed): it records SCRIPT and its events are read and dropped.

    python benchmarks/scripts/measured_alone.py [-X importtime] SCRIPT

The process starts the very command line the supervisor starts (``process.spawn``), with the
same job handed the same way, so its run time is the child's share of ``recompile-cli run
SCRIPT``; the rest is the supervisor's.
"""

import os
import sys

from recompile_cli.process import spawn
from recompile_cli.process.job import Job

flags = sys.argv[1:-1]
python, *rest = spawn.command()
spawn.command = lambda: [python, *flags, *rest]  # the interpreter's flags (-X importtime)
child = spawn.start(os.environ)
child.send(Job(kind="script", target=sys.argv[-1]), os.environ, cwd=None, stdout=1, stderr=2)
while os.read(child.log, 1 << 20):
    pass
code = child.process.wait()
child.close()
sys.exit(code if code >= 0 else 128 - code)
