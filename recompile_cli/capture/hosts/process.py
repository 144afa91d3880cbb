"""Which process of a ``jax.distributed`` job this is, read without starting JAX's backend (a job
must call ``jax.distributed.initialize`` first): the backend, index and count from JAX once the
script started it, else from ``jax.distributed``'s state, else the launcher's variables
(``LAUNCHER_VARIABLES``). ``environment`` is what a session records about its environment;
``output_path`` fills ``{process}`` and ``{host}`` in an output path.
"""

from __future__ import annotations

import os
import platform
import re
import socket
from dataclasses import dataclass
from pathlib import Path

from recompile_cli.capture.jax import distributed
from recompile_cli.session.model import NO_BACKEND, Environment, HookMode

# The process's rank as launchers set it: JAX's own, SLURM (srun), torchrun and Open MPI.
LAUNCHER_VARIABLES = ("JAX_PROCESS_ID", "SLURM_PROCID", "RANK", "OMPI_COMM_WORLD_RANK")


@dataclass(frozen=True, slots=True)
class Identity:
    """This process: its backend (None before it started) and its place in the job."""

    backend: str | None
    process_index: int | None
    process_count: int | None
    host: str


def current() -> Identity:
    """This process as JAX knows it now, without starting the backend."""
    import jax  # lazy: capture loads before the job's environment is set

    index = count = None
    backend = None
    if distributed.backend_started():
        try:
            backend = jax.default_backend()
            index, count = jax.process_index(), jax.process_count()
        except Exception:  # no backend could start: the script's own error says why
            backend = None
    if index is None:
        index, count = distributed.initialized_identity()
    return Identity(backend, index, count, host_name())


def environment(hook_mode: HookMode, cache_dir: str | None) -> Environment:
    """What a session records, read without starting JAX's backend (``jax.distributed.initialize``
    must run before it starts): the backend once it runs, else ``NO_BACKEND``; the process index,
    count and host for a process of a multi-process job."""
    import jax  # lazy: capture loads before the job's environment is set

    me = current()
    job = (me.process_count or 1) > 1
    return Environment(jax_version=jax.__version__, python_version=platform.python_version(),
                       backend=me.backend or NO_BACKEND, hook_mode=hook_mode,
                       compilation_cache_dir=cache_dir,
                       process_index=me.process_index if job else None,
                       process_count=me.process_count if job else None,
                       host=me.host if job else None)


def configured_cache_dir() -> str | None:
    """JAX's persistent compilation cache directory, if one is configured."""
    import jax  # lazy: capture loads before the job's environment is set

    # Not a declared attribute of jax's Config (and absent from some versions).
    cache_dir: str | None = getattr(jax.config, "jax_compilation_cache_dir", None)
    return cache_dir or None


def launcher_rank() -> int | None:
    """The rank the launcher gave this process (``LAUNCHER_VARIABLES``), if any."""
    for name in LAUNCHER_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return None


def host_name() -> str:
    return socket.gethostname() or "localhost"


def output_path(path: Path, process_index: int | None, host: str | None = None) -> Path:
    """``path`` with ``{process}`` and ``{host}`` filled in. An unknown process index is the
    launcher's rank, else ``pid<os pid>`` (so that the processes of a job never share a file);
    the host name is made safe for a file name."""
    text = str(path)
    if "{process}" not in text and "{host}" not in text:
        return path
    if process_index is None:
        process_index = launcher_rank()
    process = str(process_index) if process_index is not None else f"pid{os.getpid()}"
    safe_host = re.sub(r"[^A-Za-z0-9._-]", "_", host or host_name())
    return Path(text.replace("{process}", process).replace("{host}", safe_host))
