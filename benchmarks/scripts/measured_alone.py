"""The measured process of ``recompile-cli run SCRIPT`` alone, without its supervisor
(benchmarks/run.py, fixed): it records SCRIPT and streams its events to /dev/null.

    python benchmarks/scripts/measured_alone.py [-X importtime] SCRIPT

The process execs into the very command line the supervisor starts (``process.supervisor``), with
the same job, so its run time is the child's share of ``recompile-cli run SCRIPT``; the rest is
the supervisor's.
"""

import os
import sys

import msgspec

from recompile_cli.process import spawn
from recompile_cli.process.child import ENV
from recompile_cli.process.job import Job

flags = sys.argv[1:-1]
sink, control = os.open(os.devnull, os.O_WRONLY), os.open(os.devnull, os.O_RDONLY)
os.set_inheritable(sink, True)
os.set_inheritable(control, True)
job = Job(kind="script", target=sys.argv[-1], log_fd=sink, control_fd=control)
os.environ[ENV] = msgspec.json.encode(job).decode()
python, *rest = spawn.command()
os.execv(python, [python, *flags, *rest])
