"""The recorded data's vocabularies: the small string enums of ``session.model`` (whose
function, which hook mode, what happened, why, ...), in a module of their own so that the command
line can parse and check its options without defining the records
(``session.model`` re-exports every one of them; use them from either).
"""

from __future__ import annotations

from enum import StrEnum


class Owner(StrEnum):
    """Whose code defines a function: the user's, JAX's (jax, jaxlib) or another library's."""

    USER = "user"
    JAX = "jax"
    LIBRARY = "library"


class HookMode(StrEnum):
    """How the recorder listens: JAX's private tracing hooks, or the public events only."""

    PRIVATE = "private"
    PUBLIC_ONLY = "public-only"


class EventKind(StrEnum):
    """What happened in one event (nested traces are part of their parent's)."""

    RETRACED_AND_COMPILED = "retraced_and_compiled"
    RETRACED_REUSED = "retraced_executable_reused"
    COMPILED_WITHOUT_RETRACE = "compiled_without_retrace"
    TRACE_FAILED = "trace_failed"
    NESTED_TRACE = "nested_trace"


class FunctionKind(StrEnum):
    """What kind of callable a jitted function was, to name the pattern behind a new object."""

    FUNCTION = "function"
    LAMBDA = "lambda"
    PARTIAL = "partial"
    BOUND_METHOD = "bound_method"
    CLOSURE = "closure"  # a function defined inside another function


class CacheOutcome(StrEnum):
    """What JAX's persistent compilation cache did for one compile."""

    HIT = "hit"
    MISS_WRITTEN = "miss_written"
    MISS_NOT_WRITTEN = "miss_not_written"  # compiled faster than JAX's minimum for writing


class CaptureScope(StrEnum):
    """Where a variable read by traced code lives."""

    GLOBAL = "global"
    CLOSURE = "closure"


class CauseCode(StrEnum):
    """Why a function was traced or compiled again (see the README's cause table)."""

    FIRST_COMPILE = "first_compile"
    SHAPE = "shape"
    DTYPE = "dtype"
    WEAK_TYPE = "weak_type"
    STATIC_VALUE = "static_value"
    TREE_STRUCTURE = "tree_structure"
    ARG_PASSING = "arg_passing"
    NEW_FUNCTION = "new_function"
    TRACING_CONTEXT = "tracing_context"
    SHARDING = "sharding"
    DERIVED_JAXPR = "derived_jaxpr"
    UNKNOWN = "unknown"


class SlowReason(StrEnum):
    """Why JAX ran a call of a jitted function through its Python dispatch although it traced,
    lowered and compiled nothing (a *slow call*: its C++ fast path refused the call). One code
    per reason read from JAX's dispatch (``docs/slow-calls.md``); ``unknown`` when none of them
    holds, never a guess."""

    UNORDERED_EFFECT = "unordered_effect"  # jax.debug.print/callback, io_callback, breakpoint
    ORDERED_EFFECT = "ordered_effect"  # jax.debug.print(ordered=True), io_callback(ordered=True)
    REF_EFFECT = "ref_effect"  # mutable array refs read or written by the program
    PGLE = "pgle"  # profile-guided latency estimation runs still pending
    NO_EXECUTION = "no_execution"  # jax_no_execution is set
    NON_ARRAY_OUTPUT = "non_array_output"  # an output that is not a jax.Array
    FIRST_CALL_RAISED = "first_call_raised"  # the first call of that signature raised
    DEBUG_KEY_REUSE = "debug_key_reuse"  # jax_debug_key_reuse is on
    DISABLE_JIT = "disable_jit"  # called under jax.disable_jit: it ran op by op
    UNCOMMITTED_MULTIDEVICE = "uncommitted_multidevice"  # an uncommitted array on several devices
    ARG_TYPE = "arg_type"  # an argument leaf of a type the fast path does not take
    EVICTION = "eviction"  # its entry was evicted from the full C++ cache
    AOT_HOST_CALLBACK = "aot_host_callback"  # an AOT Compiled with host callbacks
    UNKNOWN = "unknown"


class CallKind(StrEnum):
    """How a slow call was made: a ``jax.jit`` function, or an ahead-of-time ``Compiled``."""

    JIT = "jit"
    AOT = "aot"
