"""The normalised fingerprint of a lowered program's text (capture.jax.programs.cache_key_text), and how two
cache keys are explained (analysis.cache.keys) and shown (render.sections.cache_keys), without JAX."""

from __future__ import annotations

import json

from msgspec.structs import replace

from recompile_cli.analysis.cache.keys import CONSTANTS_FIX, KeyPart, compare, explain
from recompile_cli.analysis.cache.outcomes import outcomes
from recompile_cli.capture.jax.programs.cache_key_text import normalise, strip_locations
from recompile_cli.render.sections.cache_keys import (
    comparison_lines,
    merged_text,
    missed_line,
    outcome_line,
)
from recompile_cli.session.cache_key import CacheKeyInfo, CacheMissReason, pairs
from recompile_cli.session.model import (
    CacheOutcome,
    Environment,
    Event,
    HookMode,
    Owner,
    Session,
)

PROGRAM = """\
#loc1 = loc("w")
module @jit_step attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32> loc("w")) -> (tensor<8xf32>) {
    %cst = stablehlo.constant dense<LR> : tensor<f32> loc(#loc3)
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8xf32> loc(#loc5)
    %1 = call @clip_N(%arg0) : (tensor<8xf32>) -> tensor<8xf32> loc(#loc5)
    %2 = stablehlo.multiply %0, %1 : tensor<8xf32> loc(#loc5)
    return %2 : tensor<8xf32> loc(#loc3)
  } loc(#loc)
  func.func private @clip_N(%arg0: tensor<8xf32>) -> tensor<8xf32> {
    return %arg0 : tensor<8xf32> loc(#loc3)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("ROOT/train.py":12:4 to :20)
#loc3 = loc("jit(step)"(#loc2))
#loc4 = loc("ROOT/train.py":29:11 to :30)
#loc6 = loc("/venv/lib/site-packages/optax/update.py":40:3)
#loc7 = loc(callsite(#loc6 at #loc4))
#loc5 = loc("jit(step)/mul"(#loc7))
"""


def program(lr: str = "1.000000e-01", root: str = "/work/a", clip: str = "clip_0") -> str:
    return PROGRAM.replace("LR", lr).replace("ROOT", root).replace("clip_N", clip)


def test_locations_are_stripped_with_their_nested_parentheses():
    line = '%0 = stablehlo.add %a, %b : tensor<f32> loc(callsite("f"("x.py":1:2) at #loc3))'
    assert strip_locations(line) == "%0 = stablehlo.add %a, %b : tensor<f32>"
    assert strip_locations('x {a = "loc(kept)"} loc(#loc1)') == 'x {a = "loc(kept)"}'


def test_the_same_program_from_another_folder_differs_only_in_metadata():
    a, b = normalise(program(root="/work/a")), normalise(program(root="/home/b/checkout"))
    assert (a.fingerprint, a.constants_digest, a.symbols_digest) == (
        b.fingerprint, b.constants_digest, b.symbols_digest)
    assert a.sites != b.sites


def test_renumbered_private_symbols_keep_the_fingerprint():
    a, b = normalise(program(clip="clip_0")), normalise(program(clip="clip_1"))
    assert a.fingerprint == b.fingerprint
    assert a.symbols_digest != b.symbols_digest


def test_constants_are_hashed_apart_and_named_with_their_user_line():
    a, b = normalise(program(lr="1.000000e-01")), normalise(program(lr="0x3D4CCCCD"))
    assert a.fingerprint == b.fingerprint
    assert a.constants_digest != b.constants_digest
    [before], [after] = a.constants, b.constants
    assert (before.value, after.value, before.type) == ("0.1", "0.05", "f32[]")
    # The user line of its first reader, not the library frame inside it.
    assert before.site == "/work/a/train.py:29"


def test_operations_carry_their_names_and_user_lines():
    found = normalise(program())
    names = [op.split(" ")[1] for op in found.ops]
    assert names[:6] == ["module", "func.func", "constant", "broadcast_in_dim", "call",
                         "multiply"]
    assert found.ops_total == len(found.ops)
    site = int(found.ops[3].split(" ")[2])
    assert found.sites[site] == "/work/a/train.py:29"


def info(text: str, **fields: object) -> CacheKeyInfo:
    found = normalise(text)
    parts = {name: "same" for name in ("jax_lib version", "backend version", "XLA flags",
                                       "compile_options", "accelerator_config", "compression",
                                       "custom_hook")}
    parts["computation"] = found.fingerprint + found.constants_digest + found.symbols_digest
    base = CacheKeyInfo(
        key="jit_step-" + parts["computation"], parts=pairs(parts),
        fingerprint=found.fingerprint, constants_digest=found.constants_digest,
        symbols_digest=found.symbols_digest, constants=tuple(found.constants),
        ops="; ".join(found.ops), ops_total=found.ops_total, sites=tuple(found.sites),
        jaxlib_version="0.10.2", backend_version="cpu 1",
        compile_options="num_replicas=1; num_partitions=1; devices=1")
    return replace(base, **fields)  # type: ignore[arg-type]


def test_explain_names_constants_with_both_values_and_the_fix():
    [change] = explain(info(program()), info(program(lr="5.000000e-02")))
    assert change.part == KeyPart.CONSTANTS and change.fix == CONSTANTS_FIX
    [detail] = change.details
    assert (detail.before, detail.after, detail.site) == ("0.1", "0.05", "/work/a/train.py:29")


def test_explain_says_symbols_only_and_metadata_only():
    [symbols] = explain(info(program()), info(program(clip="clip_1")))
    assert symbols.part == KeyPart.PRIVATE_SYMBOLS and "otherwise identical" in symbols.summary
    old = info(program())
    parts = pairs({**old.part_digests(), "computation": "other"})
    [metadata] = explain(old, replace(old, parts=parts))
    assert metadata.part == KeyPart.METADATA


def test_explain_names_the_first_differing_operation():
    changed = program().replace("stablehlo.multiply", "stablehlo.add")
    [change] = explain(info(program()), info(changed))
    assert change.part == KeyPart.COMPUTATION
    [detail] = change.details
    assert (detail.what, detail.before, detail.after) == (
        "operation 6", "multiply", "add")
    assert detail.site == "/work/a/train.py:29"


def test_explain_names_flags_versions_and_device_count():
    old = info(program())
    new = replace(old, parts=pairs({**old.part_digests(), "XLA flags": "x",
                                    "jax_lib version": "y", "compile_options": "z"}),
                  xla_flags=("--xla_cpu_enable_fast_math=true",), jaxlib_version="0.12.0",
                  compile_options=pairs({**old.options(), "devices": "4"}))
    changes = {c.part: c for c in explain(old, new)}
    assert list(changes) == [KeyPart.XLA_FLAGS, KeyPart.JAXLIB_VERSION, KeyPart.COMPILE_OPTIONS]
    assert "--xla_cpu_enable_fast_math=true added" in changes[KeyPart.XLA_FLAGS].summary
    assert "0.10.2 -> 0.12.0" in changes[KeyPart.JAXLIB_VERSION].summary
    assert "devices 1 -> 4" in changes[KeyPart.COMPILE_OPTIONS].summary


def event(seq: int, key: CacheKeyInfo, outcome: CacheOutcome, name: str = "step") -> Event:
    return Event(seq=seq, function=name, defined_at="/work/a/train.py:10", owner=Owner.USER,
                 call_site=None, call_index=None, depth=0, traced=True, compiled=True,
                 start_seconds=0.0, persistent_cache=outcome, cache_key=key)


def test_compare_flags_only_new_keys_and_escapes_what_it_shows():
    old = info(program())
    new = info(program(lr="5.000000e-02"))
    same = compare([event(0, old, CacheOutcome.MISS_WRITTEN)], [event(0, old, CacheOutcome.HIT)])
    assert (same.changed, same.same) == ((), 1)
    found = compare([event(0, old, CacheOutcome.MISS_WRITTEN, "st\x1bep")],
                    [event(0, new, CacheOutcome.MISS_WRITTEN, "st\x1bep")])
    text = "\n".join(comparison_lines(found))
    assert "\x1b" not in text and "0.1 -> 0.05" in text


def test_outcomes_count_reasons_and_exact_savings():
    key = replace(info(program()), stored_exact=True)
    slow = replace(key, reason=CacheMissReason.UNDER_MIN_COMPILE_TIME)
    hit = replace(event(0, key, CacheOutcome.HIT), cache_saved_seconds=0.25)
    found = outcomes([hit, event(1, slow, CacheOutcome.MISS_NOT_WRITTEN),
                      event(2, key, CacheOutcome.MISS_WRITTEN)])
    assert outcome_line(found) == ("1 hit (0.250 s saved), 1 miss written, 1 miss not written "
                                   "(under_min_compile_time 1)")


def test_the_outcomes_name_the_users_functions_that_missed_and_how_to_see_why():
    key = info(program())
    found = outcomes([event(0, key, CacheOutcome.HIT, "hit"),
                      event(1, key, CacheOutcome.MISS_WRITTEN, "train_step"),
                      event(2, key, CacheOutcome.MISS_NOT_WRITTEN, "eval_step"),
                      event(3, key, CacheOutcome.MISS_WRITTEN, "train_step"),
                      replace(event(4, key, CacheOutcome.MISS_WRITTEN, "sin"), owner=Owner.JAX)])
    assert found.missed == ("train_step", "eval_step")
    assert missed_line(found) == (
        "missed: train_step, eval_step; to see why, save this run and an earlier one (--save) "
        "and compare them: recompile-cli diff EARLIER.json THIS.json")
    assert missed_line(outcomes([event(0, key, CacheOutcome.HIT)])) is None


def test_merge_explains_each_process_against_the_first():
    old, new = info(program()), info(program(lr="5.000000e-02"))
    session = Session(
        environment=Environment("0.10.2", "3.11", "cpu", HookMode.PRIVATE),
        target="job.py", wall_seconds=1.0,
        events=(replace(event(0, old, CacheOutcome.MISS_WRITTEN), process=0),
                replace(event(1, new, CacheOutcome.MISS_WRITTEN), process=1)))
    text = merged_text("merge report\n", session, "table")
    assert "Persistent compilation cache (process 0 -> process 1)" in text
    assert "0.1 -> 0.05" in text
    data = json.loads(merged_text('{"functions": []}', session, "json"))
    [changed] = data["persistent_cache"]["1"]["changed"]
    assert changed["changes"][0]["part"] == "constants"


def test_explain_names_a_constant_whose_shape_or_dtype_changed_at_its_user_line():
    """A baked-in table that grew (or changed dtype) is named by its abstract types and the
    user line that reads it, not as "constant -> constant" at the first operation's line."""
    grown = program().replace("dense<1.000000e-01> : tensor<f32>",
                              "dense<[1.0, 2.0]> : tensor<2xf32>")
    retyped = program().replace("dense<1.000000e-01> : tensor<f32>", "dense<1> : tensor<i32>")
    for changed, what, after in ((grown, "shape", "f32[2]"), (retyped, "dtype", "i32[]")):
        [change] = explain(info(program()), info(changed))
        assert change.part == KeyPart.COMPUTATION
        assert change.summary == (f"the program differs: a baked-in constant 1 changed {what} "
                                  f"(f32[] -> {after}) at /work/a/train.py:29")
        [detail] = change.details
        assert (detail.what, detail.before, detail.after, detail.site) == (
            "constant 1", "f32[]", after, "/work/a/train.py:29")
