"""Random sessions for the property test: many small signatures over a few paths, dims, dtypes,
weak types, statics (compared by text, or by equality class: the same text in two classes, two
texts in one), structures (node maps whose differing parts count one each), contexts and
function ids, most of them a small mutation of an earlier one, so that ties and near-ties are
frequent."""

from __future__ import annotations

import random

from recompile_cli.session.model import Change, Event, Leaf, Signature, StaticClass, TraceError
from recompile_cli.session.structures import FIELD, Note, node_map_text, with_note


def _state(a: str, c: str, unequal: int = 0) -> str:
    """A custom node with two static fields, as a node map: one or two parts differ."""
    return node_map_text([("", "S"), (".a", with_note(a, Note(FIELD, unequal, "T"))),
                          (".c", with_note(c, Note(FIELD)))], "CustomNode(S[...], [*])")


NODE_MAPS = [_state("1", "u"), _state("2", "u"), _state("2", "v"), _state("1", "u", 1)]
STRUCTURES = {
    "x": [None, "*", "*", "*", "[*]", "[*, *]"],
    "y": [None, None, "*"],
    "b": [None, None, "{'p': *}", "{'p': *, 'q': *}", *NODE_MAPS],
}
PATHS = {"*": [""], "[*]": ["[0]"], "[*, *]": ["[0]", "[1]"], "{'p': *}": ["['p']"],
         "{'p': *, 'q': *}": ["['p']", "['q']"], **{text: [".p"] for text in NODE_MAPS}}
ALL_PATHS = ["x", "x[0]", "x[1]", "y", "b['p']", "b['q']", "b.p", "z"]
STATICS = {"n": [None, "1", "2", "3"], "mode": [None, None, "'a'", "'b'"]}
CLASSES = [0, 0, 1, 2]  # a static's equality class: independent of its text
CONTEXT = {"x64": [None, None, "True", "False"], "mesh": [None, None, None, "m1", "m2"]}
BASES = [{}, {"x64": "False"}, {"x64": "False", "mesh": "m1"}]


def random_leaf(r: random.Random) -> Leaf:
    return Leaf(shape=r.choice([(2,), (2,), (3,), (), (2, 2)]),
                dtype=r.choice(["float32", "float32", "int32"]),
                weak_type=r.random() < 0.15, sharding="s1" if r.random() < 0.08 else None)


COMPONENTS = ([f"struct:{a}" for a in STRUCTURES] + [f"leaf:{p}" for p in ALL_PATHS]
              + [f"static:{s}" for s in STATICS] + [f"cls:{s}" for s in STATICS]
              + [f"ctx:{c}" for c in CONTEXT] + ["kw", "pos_tweak", "fid", "z", "drop",
                                                 "classes"])


def draw(r: random.Random, component: str):
    kind, _, name = component.partition(":")
    if kind == "struct":
        return r.choice(STRUCTURES[name])
    if kind == "leaf":
        return random_leaf(r)
    if kind == "static":
        return r.choice(STATICS[name])
    if kind == "cls":
        return r.choice(CLASSES)
    if component == "classes":
        return r.random() < 0.7  # statics compared by class (a recording) or by text
    if kind == "ctx":
        return r.choice(CONTEXT[name])
    if component == "kw":
        return frozenset(a for a in ["x", "y", "b", "n", "mode"] if r.random() < 0.2)
    if component == "pos_tweak":
        return 1 if r.random() < 0.05 else 0
    if component == "fid":
        return r.choice([0, 1, 1, 1, 2])
    return r.random() < 0.05  # z, drop: rare oddities (a leaf outside any structure, a leaf lost)


def build(spec: dict) -> Signature:
    structure = {a: spec[f"struct:{a}"] for a in STRUCTURES if spec[f"struct:{a}"] is not None}
    leaves = {}
    for arg, text in structure.items():
        for suffix in PATHS[text]:
            leaves[arg + suffix] = spec[f"leaf:{arg + suffix}"]
    if spec["z"]:
        leaves["z"] = spec["leaf:z"]
    if spec["drop"] and leaves:
        del leaves[min(leaves)]
    static = {s: spec[f"static:{s}"] for s in STATICS if spec[f"static:{s}"] is not None}
    args = set(structure) | set(static)
    keywords = tuple(sorted(spec["kw"] & args))
    context = {c: spec[f"ctx:{c}"] for c in CONTEXT if spec[f"ctx:{c}"] is not None}
    classes = ({s: StaticClass(spec[f"cls:{s}"], "T") for s in static} if spec["classes"]
               else {})
    return Signature(leaves=leaves, static=static, structure=structure,
                     positional=len(args) - len(keywords) + spec["pos_tweak"],
                     keywords=keywords, context=context, function_id=spec["fid"],
                     static_classes=classes)


def random_session(seed: int, max_events: int = 40) -> tuple[list[Event], dict[str, str]]:
    r = random.Random(seed)
    specs: dict[str, list[dict]] = {"f": [], "g": []}
    events = []
    for seq in range(r.randint(1, max_events)):
        function = "g" if r.random() < 0.2 else "f"
        previous = specs[function]
        if previous and r.random() < 0.7:  # a mutation of an earlier call
            spec = dict(r.choice(previous[-4:] if r.random() < 0.5 else previous))
            for component in r.sample(COMPONENTS, r.choice([1, 1, 2, 3])):
                spec[component] = draw(r, component)
        else:
            spec = {c: draw(r, c) for c in COMPONENTS}
        previous.append(spec)
        roll = r.random()
        signature: Signature | None = build(spec)
        traced, error, changes = True, None, None
        if roll < 0.05:
            error = TraceError("TracerBoolConversionError", "bool", argument="x")
        elif roll < 0.08:
            signature = None
        elif roll < 0.15:
            traced = False
            changes = r.choice([None, (), (Change("in_shardings", "a", "b", argument="x"),)])
        events.append(Event(seq=seq, function=function, defined_at="p.py:1", owner="user",
                            call_site=None, call_index=None, depth=0, traced=traced,
                            compiled=error is None, start_seconds=float(seq),
                            signature=signature, lowering_changes=changes, error=error))
    return events, r.choice(BASES)
