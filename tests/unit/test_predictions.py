"""Predicted compile counts: distinct signatures after a fix (``analysis/advice/predict.py``)."""

from __future__ import annotations

from builders import leaf, sig

from recompile_cli.analysis.advice import predict


def lengths(*sizes: int, dim: int = 0):
    return [sig(x=leaf("f32", *((n, 8) if dim == 0 else (8, n)))) for n in sizes]


def test_signature_key_is_hashable_and_tells_apart_what_jit_keys_on():
    a = sig(x=leaf("f32", 3), static={"n": "1"}, context={"c": "1"}, fid=7)
    assert predict.signature_key(a) == predict.signature_key(
        sig(x=leaf("f32", 3), static={"n": "1"}, context={"c": "1"}, fid=7, kind="lambda"))
    others = [sig(x=leaf("f32", 4), static={"n": "1"}, context={"c": "1"}, fid=7),
              sig(x=leaf("f32", 3), static={"n": "2"}, context={"c": "1"}, fid=7),
              sig(x=leaf("f32", 3), static={"n": "1"}, context={"c": "2"}, fid=7),
              sig(x=leaf("f32", 3), static={"n": "1"}, context={"c": "1"}, fid=8),
              sig(x=leaf("f32", 3), static={"n": "1"}, context={"c": "1"}, fid=7,
                  keywords=("x",))]
    assert len({predict.signature_key(s) for s in [a, *others]}) == 6


def test_compiles_after_identity_counts_distinct_signatures():
    assert predict.compiles_after(lengths(1, 2, 2, 3, 1), lambda s: s) == 3
    assert predict.compiles_after([], lambda s: s) == 0


def test_compiles_after_power_of_two_buckets():
    sigs = lengths(*range(1, 41))
    assert predict.compiles_after(sigs, predict.map_dim("x", 0, predict.next_power_of_two)) == 7


def test_compiles_after_multiples():
    sigs = lengths(*range(1, 41))
    width = predict.multiple_for(list(range(1, 41)))
    assert width == 8
    assert predict.compiles_after(sigs, predict.map_dim("x", 0, predict.round_up(width))) == 5


def test_map_dim_leaves_other_paths_and_out_of_range_dims_alone():
    sigs = lengths(3, 5)
    assert predict.compiles_after(sigs, predict.map_dim("y", 0, lambda n: 8)) == 2
    assert predict.compiles_after(sigs, predict.map_dim("x", 5, lambda n: 8)) == 2
    assert predict.compiles_after(sigs, predict.map_dim("x", 0, lambda n: 8)) == 1


def test_strong_type():
    sigs = [sig(s=leaf("f32", weak=True)), sig(s=leaf("f32")), sig(s=leaf("f32", weak=True))]
    assert predict.compiles_after(sigs, lambda s: s) == 2
    assert predict.compiles_after(sigs, predict.strong_type("s")) == 1


def test_one_dtype_also_drops_the_weak_type():
    sigs = [sig(x=leaf("f32", 3)), sig(x=leaf("i32", 3)), sig(x=leaf("f16", 3, weak=True))]
    assert predict.compiles_after(sigs, predict.one_dtype("x", "float32")) == 1


def test_without_static():
    sigs = [sig(x=leaf("f32", 3), static={"n": str(i), "mode": "'a'"}) for i in range(5)]
    assert predict.compiles_after(sigs, predict.without_static("n")) == 1
    assert predict.compiles_after(sigs, predict.without_static("mode")) == 5


def test_same_function_and_same_passing():
    fns = [sig(x=leaf("f32", 3), fid=i) for i in range(1, 5)]
    assert predict.compiles_after(fns, predict.same_function) == 1
    passing = [sig(x=leaf("f32", 3), y=leaf("f32", 3)),
               sig(x=leaf("f32", 3), y=leaf("f32", 3), keywords=("y",)),
               sig(x=leaf("f32", 3), y=leaf("f32", 3), keywords=("x", "y"))]
    assert predict.compiles_after(passing, predict.same_passing) == 1


def test_varying_dims_in_order_of_first_appearance():
    sigs = [sig(x=leaf("f32", n, 8, m)) for n, m in [(4, 1), (2, 1), (4, 3), (9, 1)]]
    assert predict.varying_dims(sigs, "x") == {0: [4, 2, 9], 2: [1, 3]}


def test_varying_dims_of_a_path_with_several_ranks_or_absent():
    sigs = [sig(x=leaf("f32", 4)), sig(x=leaf("f32", 4, 2))]
    assert predict.varying_dims(sigs, "x") == {}
    assert predict.varying_dims(sigs, "y") == {}
    assert predict.varying_dims(lengths(5, 5), "x") == {}


def test_bucket_helpers():
    assert [predict.next_power_of_two(n) for n in (0, 1, 2, 3, 4, 5, 33)] == [
        1, 1, 2, 4, 4, 8, 64]
    assert predict.multiple_for([1, 40]) == 8
    assert predict.multiple_for([100, 1000]) == 128
    assert predict.multiple_for([3]) == 1
    up8 = predict.round_up(8)
    assert [up8(n) for n in (0, 1, 8, 9, 16, 17)] == [8, 8, 8, 16, 16, 24]
