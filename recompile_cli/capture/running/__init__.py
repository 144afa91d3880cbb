"""Running a target under the recorder: finding and importing user code (``loader``), running a
spec's calls or a whole script (``runner``), a warm-up plan before the workload (``warmup``), and
tracing a spec's calls without running them (``forecast``).
"""
