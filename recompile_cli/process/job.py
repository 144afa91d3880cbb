"""The job of a measured process: what it runs, with every option already validated by the
command that asked for it. It travels to the child as JSON (msgspec); it holds no behaviour.
"""

from __future__ import annotations

from typing import Any

import msgspec


class Job(msgspec.Struct, frozen=True, kw_only=True):
    """What the measured process runs: every option was validated by the supervisor first.

    ``kind`` is ``script`` (``run``, or a budget file's ``script:``: ``target`` is its path;
    with ``module``, ``run -m``: ``target`` is the module's name, run as ``python -m`` would),
    ``profile`` (a spec's calls to ``target``) or ``forecast`` (the same calls traced, not run).
    ``log_fd`` is the events pipe's write end in this process, ``control_fd`` the read end of
    the supervisor's stop requests (one byte: the exit code of the signal it received).
    """

    kind: str
    target: str
    module: bool = False  # a script job whose ``target`` is a module name (``run -m``)
    log_fd: int = -1
    control_fd: int = -1
    script_args: tuple[str, ...] = ()
    spec: str | None = None
    spec_option: str = "--args"
    warmup: str | None = None
    max_array_bytes: int | None = None
    max_calls: int | None = None
    jit_options: dict[str, Any] = {}
    no_jit: bool = False
    keep_going: bool = False
    lower: bool = False
    hook_mode: str = "private"
    count_calls: bool = False
    host_timeout: float | None = None
    compilation_cache: str | None = None
    after_warmup: str | None = None  # a warm-up plan run before the workload (its path)
    warmup_parallel: int | None = None
    stdout_to_stderr: bool = False  # the report goes to stdout: the target's output to stderr
    # Where and with what it runs (``spawn.Started.send`` fills them in): a waiting child was
    # started before the job was known, so the job carries its folder and environment.
    cwd: str | None = None
    env: dict[str, str] | None = None
