"""Padding advice for numeric array dimensions that take several sizes, and what padding costs.

Owns the ``shape`` advice (pad to one size, to power-of-two buckets or to multiples; the last
smaller batch; two datasets) and its cost: the extra elements the padded calls compute,
weighted by how many calls had each size as far as the record tells (``call_counts``). Only
numeric arrays are padded (``rules`` checks it): a PRNG key or an opaque dtype has no
dimension to pad.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from recompile_cli.analysis.advice import predict
from recompile_cli.analysis.advice.groups import Advice, Group, in_model, listed, numeric_dtype
from recompile_cli.session.model import CauseCode

# Padding advice whose extra work is absurd is dropped, not printed: a bucketing option is left
# out when padding would compute more than MAX_OVERHEAD times the elements the calls really
# have (1.0: more than twice the work) over the calls recorded (its lowest possible value where
# the calls of each size were counted, else one call per size). No advice is better than
# advice that trades a compile for that much work on every call.
MAX_OVERHEAD = 1.0


@dataclass(frozen=True, slots=True)
class CallCounts:
    """How many calls had each distinct signature (a row of the group's table).

    ``known[row]`` calls are known to have had that row's signature (its traces, and the calls
    before a second signature existed). ``windows`` are (calls, k): calls that re-used the
    compiled signature of one of the first ``k`` rows, which one unknown. ``counted`` is False
    where the calls were not counted: each row then had one call or more, how many unknown.
    """

    known: list[int]
    windows: list[tuple[int, int]]
    counted: bool
    total: int


def call_counts(g: Group) -> CallCounts:
    rows = g.table.index  # the row of each trace, in order
    indexes = [e.call_index if e.call_of == g.key else None for e in g.traces]
    one_each = CallCounts([1] * g.compiles, [], False, len(rows))
    if g.calls is None or None in indexes or not indexes or indexes[0] != 0:
        return one_each
    known = [0] * g.compiles
    windows: list[tuple[int, int]] = []
    seen, previous = 0, -1
    for row, index in zip(rows, indexes, strict=True):
        assert index is not None
        if index < previous:
            return one_each
        if index > previous:
            _window(known, windows, index - previous - 1, seen)
            known[row] += 1
        seen, previous = max(seen, row + 1), index
    if g.calls <= previous:
        return one_each
    _window(known, windows, g.calls - previous - 1, seen)
    return CallCounts(known, windows, True, g.calls)


def _window(known: list[int], windows: list[tuple[int, int]], calls: int, seen: int) -> None:
    if calls == 0:
        return
    if seen == 1:  # only one signature was compiled: every call re-used it
        known[0] += calls
    else:
        windows.append((calls, seen))


@dataclass(frozen=True, slots=True)
class Cost:
    """Extra elements computed by padding, as a fraction of the elements of the real sizes:
    the lowest and highest values the calls allow (equal where every call is known). Where
    the calls were not counted, ``low`` counts one call of each size and ``high`` is the
    largest extra of one call."""

    low: float
    high: float
    counts: CallCounts

    @property
    def absurd(self) -> bool:
        return self.low > MAX_OVERHEAD

    def text(self) -> str:
        """``0.8% more elements over the 64 calls``, or ``33% more elements over one call of
        each size`` where the calls were not counted."""
        if not self.counts.counted:
            return f"{_percent(self.low)} more elements over one call of each size"
        shown = (_percent(self.low) if _percent(self.low) == _percent(self.high)
                 else f"{_percent(self.low)}-{_percent(self.high)}")
        return f"{shown} more elements over the {self.counts.total} calls"


def _percent(fraction: float) -> str:
    value = 100 * fraction
    if value >= 9.95:
        return f"{value:.0f}%"
    return f"{value:.1f}%" if value >= 0.05 else "<0.1%"


def cost(g: Group, axis: list[tuple[str, int]], bucket: dict[int, int] | list[dict[int, int]],
         counts: CallCounts) -> Cost:
    """What padding every (path, dim) of ``axis`` to ``bucket[size]`` costs the calls (or
    each (path, dim) to its own map's, for a list of maps in the order of ``axis``)."""
    real, extra = [], []
    maps = bucket if isinstance(bucket, list) else [bucket] * len(axis)
    dims: dict[str, dict[int, dict[int, int]]] = {}
    for (path, dim), one in zip(axis, maps, strict=True):
        dims.setdefault(path, {})[dim] = one
    columns = [(g.table.leaves(path), path_dims) for path, path_dims in dims.items()]
    for row in range(g.compiles):
        r = p = 0
        for values, padded_dims in columns:
            value = values[row]
            if value is None:
                continue
            shape = value[0]
            size = math.prod(shape)
            r += size
            p += math.prod([padded_dims[d].get(n, n) if d in padded_dims else n
                            for d, n in enumerate(shape)]) - size
        real.append(r)
        extra.append(p)
    ratios = [p / r for p, r in zip(extra, real, strict=True) if r]
    if not counts.counted:
        low = sum(extra) / sum(real) if sum(real) else 0.0  # one call of each size
        return Cost(low, max(ratios, default=0.0), counts)
    base_p = sum(k * p for k, p in zip(counts.known, extra, strict=True))
    base_r = sum(k * r for k, r in zip(counts.known, real, strict=True))
    return Cost(_extreme(base_p, base_r, counts.windows, extra, real, lowest=True),
                _extreme(base_p, base_r, counts.windows, extra, real, lowest=False), counts)


def _extreme(base_p: int, base_r: int, windows: list[tuple[int, int]], extra: list[int],
             real: list[int], lowest: bool) -> float:
    """The lowest (or highest) (base_p + extra of the windows' calls) / (base_r + real of
    them) over every choice of row for each window (Dinkelbach's iteration)."""
    sign = 1 if lowest else -1
    ratio = base_p / base_r if base_r else 0.0
    for _ in range(100):
        p, r = base_p, base_r
        for calls, k in windows:
            j = min(range(k), key=lambda i: sign * (extra[i] - ratio * real[i]))
            p, r = p + calls * extra[j], r + calls * real[j]
        new = p / r if r else 0.0
        if math.isclose(new, ratio):
            return new
        ratio = new
    return ratio


# -- advice ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Axis:
    """The (path, dim)s of numeric arrays that take the same sizes: one axis (e.g. the batch of
    every array of a batch), padded together, and named by ``path``'s dims of it."""

    path: str
    dim: int
    values: list[int]  # its sizes, in the order seen
    pairs: list[tuple[str, int]]

    @property
    def where(self) -> str:
        """```x` dim 0``, ```x` dims 0, 1``."""
        dims = [d for p, d in self.pairs if p == self.path] or [self.dim]
        return f"`{self.path}` dim{'s' if len(dims) > 1 else ''} {', '.join(map(str, dims))}"

    @property
    def took(self) -> str:
        """``took the values 8, 16``, ``took 3 values (10..30)``."""
        if len(self.values) == 2:
            return f"took the values {listed([str(v) for v in self.values])}"
        return f"took {len(self.values)} values ({min(self.values)}..{max(self.values)})"


def _axes(g: Group) -> list[_Axis]:
    """Every axis along which the group's argument varies, then those of the other numeric
    arrays of data whose shapes changed in the same compiles: padding one dimension while
    another still varies saves nothing. The argument's axis of the most sizes first."""
    paths = list(dict.fromkeys([g.argument or "", *(
        c.argument for causes in g.changes for c in causes
        if c.code == CauseCode.SHAPE and c.argument)]))
    axes: list[_Axis] = []
    padded: set[tuple[str, int]] = set()
    for path in paths:
        if path != g.argument and (not _numeric_path(g.table, path)
                                   or in_model(g.distinct, path)):
            continue  # not data to pad: named as a change that padding leaves
        dims = sorted(g.table.varying_dims(path).items(), key=lambda item: -len(item[1]))
        for dim, values in dims:
            if (path, dim) in padded:
                continue
            pairs = _same_axis(g.table, values)
            if (path, dim) not in pairs:
                pairs.append((path, dim))
            padded.update(pairs)
            axes.append(_Axis(path, dim, values, pairs))
    return axes


def pad_dimension(g: Group) -> Advice | None:
    """Pad the varying dimensions of a numeric array, and of the arrays whose shapes changed
    with it (``rules`` checked the preconditions)."""
    axes = _axes(g)
    fixed: list[tuple[CauseCode, str | None]] = list(dict.fromkeys(
        (CauseCode.SHAPE, p) for a in axes for p, _ in a.pairs))
    if len(axes) == 1:
        return _pad_axis(g, axes[0], fixed)
    return _pad_axes(g, axes, fixed)


def _alone(g: Group, text: str, fixed: list[tuple[CauseCode, str | None]]) -> Advice | None:
    """Padding that would not lower the count, because something padding cannot remove
    changed in the same compiles: the advice names it, and predicts nothing."""
    if not g.remaining(fixed):
        return None
    return Advice(text + g.also(fixed))


def _capped(bucket: dict[int, int], full: int) -> dict[int, int]:
    """Each size's bucket, never above the largest size seen: the last bucket is the largest
    size, which gives the same compiles with less padding (and fits what the sizes fit)."""
    return {n: min(b, full) for n, b in bucket.items()}


def _pad_axis(g: Group, axis: _Axis, fixed: list[tuple[CauseCode, str | None]]
              ) -> Advice | None:
    """Pad the dimensions of one axis."""
    path, dim, values, pairs = axis.path, axis.dim, axis.values, axis.pairs
    where = axis.where
    full = max(values)
    rows = predict.Axis(g.table, pairs)
    sizes = g.table.each_signature(rows.column(path, dim))  # of every trace, in order
    counts = call_counts(g)
    to_full = dict.fromkeys(values, full)  # each size -> its bucket, for one fix
    pad_all = rows.compiles_after(to_full)
    full_cost = cost(g, pairs, to_full, counts)
    if pad_all >= g.compiles:
        return _alone(g, f"{where} {axis.took}: padding it to {full} (and masking) would "
                         "reuse one shape.", fixed)
    if len(values) == 2:
        small = min(values)
        # The call history of the argument: a last batch is the leading dimension, first the
        # full size, then the smaller one from the same call site at the end of the run or of
        # each epoch; two datasets come from two call sites, or early.
        at, sites = _history(g, path, dim, small, full)
        how_often = (_last_batch(g, sizes, small, full, at, sites) if dim == 0 else None)
        if how_often is not None:
            if counts.counted and at is not None and g.compiles == 2 and g.calls:
                # the smaller batch every (at + 1)th call, as said: the calls of each size
                small_calls = g.calls // (at + 1)
                full_cost = cost(g, pairs, to_full, CallCounts(
                    [g.calls - small_calls, small_calls], [], True, g.calls))
            weighed = f" (padding computes {full_cost.text()})" if counts.counted else ""
            return Advice(
                f"the last batch is smaller: {where} is {full}, then {small} {how_often}. Pad "
                f"the last batch to {full} (and mask it) or drop it (drop_last): {g.compiles} "
                f"compiles -> {pad_all}{weighed}." + g.also(fixed, saves=True), pad_all)
        if full_cost.absurd:
            return None
        pad = (f"pad to {full} (and mask) so that one shape is reused: {g.compiles} compiles "
               f"-> {pad_all} (pads {full_cost.text()})")
        if dim > 0:  # a length (a sequence, a number of items), not the batch
            return Advice(
                f"{where} (not the leading, batch dimension) took the values "
                f"{listed([str(v) for v in values])}: a length that varies between calls. Pad "
                f"it to {full}, or to a few bucket sizes if more lengths come (e.g. multiples "
                f"of {predict.multiple_for(values)}), and mask the padding: {g.compiles} "
                f"compiles -> {pad_all} (pads {full_cost.text()})." + g.also(fixed, saves=True),
                pad_all)
        # Two datasets only on evidence: each size from its own line of code. Counted calls
        # (a spec, --count-calls) show a sequence of calls of one function instead.
        if (sizes.count(small) == 1 and sizes.count(full) == 1 and at is None
                and len(sites) >= 2):
            last = (f" (If {small} is instead the last, smaller batch of a loop, pad it or drop "
                    "it: drop_last.)" if sizes[-1] == small else "")
            return Advice(
                f"two datasets of different sizes: {where} is {sizes[0]}, then {sizes[1]}; "
                "each size compiles once, which is expected (e.g. a train and a test set). To "
                f"share one compile, {pad}.{last}" + g.also(fixed, saves=True), pad_all)
        return Advice(f"{where} took the values {listed([str(v) for v in values])}: {pad}."
                      + g.also(fixed, saves=True), pad_all)
    # Buckets only where they keep more compiles than one shape does (else one shape is the
    # smaller pad), and of two with the same count the one that pads less.
    options: dict[int, tuple[float, str]] = {}  # compiles -> (padding, text)
    to_pow2 = _capped(predict.powers_of_two(values), full)
    pow2 = rows.compiles_after(to_pow2)
    pow2_cost = cost(g, pairs, to_pow2, counts)
    if pow2 == pad_all and not full_cost.absurd:  # the buckets merge every size: one shape
        options[pad_all] = (full_cost.low, f"{pad_all} with one shape, padded to {full} "
                                           f"(pads {full_cost.text()})")
    if pad_all < pow2 < g.compiles and not pow2_cost.absurd:
        options[pow2] = (pow2_cost.low, f"{pow2} with power-of-two buckets of {where} "
                                        f"({_buckets(to_pow2, full)}; pads {pow2_cost.text()})")
    width = predict.multiple_for(values)
    to_multiple = _capped(predict.multiples_of(width, values), full)
    multiples = rows.compiles_after(to_multiple)
    multiple_cost = cost(g, pairs, to_multiple, counts)
    if (pad_all < multiples < g.compiles and width > 1 and not multiple_cost.absurd
            and multiple_cost.low < options.get(multiples, (math.inf, ""))[0]):
        last = "" if full % width == 0 else f", the last one {full}"
        options[multiples] = (multiple_cost.low, f"{multiples} with multiples of {width}{last} "
                                                 f"(pads {multiple_cost.text()})")
    if list(options) in ([], [pad_all]):  # one shape alone
        if full_cost.absurd:
            return None
        return Advice(
            f"{where} {axis.took}: pad to {full} (and mask) so that one shape is reused: "
            f"{g.compiles} compiles -> {pad_all} (pads {full_cost.text()})."
            + g.also(fixed, saves=True), pad_all)
    return Advice(
        f"{where} {axis.took}: {g.compiles} compiles -> "
        + ", or ".join(text for _, text in options.values())
        + ". Pad along that dimension to the bucket size and mask the padding."
        + g.also(fixed, saves=True), next(iter(options)))


def _buckets(bucket: dict[int, int], full: int) -> str:
    """``16, 32, 48``: the buckets, the last one the largest size seen (no power of two)."""
    text = listed([str(b) for b in sorted(set(bucket.values()))], 8)
    return text if full & (full - 1) == 0 else f"{text}: the last one the largest size seen"


def _pad_axes(g: Group, axes: list[_Axis], fixed: list[tuple[CauseCode, str | None]]
              ) -> Advice | None:
    """Pad the dimensions of several axes that varied in the same compiles: each to its
    largest size, or, for an axis of three sizes or more, to power-of-two buckets."""
    pairs = [pair for axis in axes for pair in axis.pairs]
    rows = predict.Axis(g.table, pairs)
    counts = call_counts(g)
    said = " and ".join(f"{axis.where} {axis.took}" for axis in axes)
    to_full = [dict.fromkeys(axis.values, max(axis.values)) for axis in axes
               for _ in axis.pairs]
    pad_all = rows.compiles_after(to_full)
    targets = ", ".join(f"{axis.where} to {max(axis.values)}" for axis in axes)
    if pad_all >= g.compiles:
        return _alone(g, f"{said}: padding each to its largest size ({targets}, and masking) "
                         "would reuse one shape.", fixed)
    full_cost = cost(g, pairs, to_full, counts)
    options: list[tuple[int, str]] = []
    if not full_cost.absurd:
        options.append((pad_all, f"{pad_all} with each padded to its largest size ({targets}; "
                                 f"pads {full_cost.text()})"))
    many = [axis for axis in axes if len(axis.values) > 2]
    if many:
        to_pow2 = [_capped(predict.powers_of_two(axis.values), max(axis.values))
                   if axis in many else dict.fromkeys(axis.values, max(axis.values))
                   for axis in axes for _ in axis.pairs]
        pow2 = rows.compiles_after(to_pow2)
        pow2_cost = cost(g, pairs, to_pow2, counts)
        if pad_all < pow2 < g.compiles and not pow2_cost.absurd:
            named = " and ".join(f"{axis.where} ({_buckets(bucket, max(axis.values))})"
                                 for axis, bucket in zip(many, [_capped(predict.powers_of_two(
                                     a.values), max(a.values)) for a in many], strict=True))
            options.append((pow2, f"{pow2} with power-of-two buckets of {named}, the others "
                                  f"padded to their largest size (pads {pow2_cost.text()})"))
    if not options:
        return None
    return Advice(
        f"{said}, in the same calls: {g.compiles} compiles -> "
        + ", or ".join(text for _, text in options)
        + ". Pad along each of these dimensions and mask the padding; padding one alone "
        "leaves the others to compile." + g.also(fixed, saves=True), options[0][0])


def change_rank(g: Group) -> Advice:
    """A numeric array that arrived with different ranks: padding cannot merge them."""
    return Advice(
        f"`{g.argument}` reached {g.name} with different ranks "
        f"({listed([leaf.short for leaf in g.leaves])}); arrays of different ranks are "
        "different programs, and padding cannot merge them. If one rank is meant, reshape it "
        "before the call (e.g. add the missing axis)." + g.also())


def _last_batch(g: Group, sizes: list[int], small: int, full: int, at: int | None,
                sites: set[str | None]) -> str | None:
    """How often a smaller last batch came (``once at the end (call 64 of 64)``, ``every 4th
    call ...``), or None when the record does not show one: the full size first, the smaller
    one traced once, last, from the one call site, after more than one call of the full size.
    Uncounted calls do not say how often: a batch of each epoch and one at the end of the run
    look the same."""
    if not (sizes[0] == full and sizes[-1] == small and sizes.count(small) == 1):
        return None
    if at is None:
        if len(sites) != 1 or g.calls is not None:
            return None
        return ("in a later call (the last batch of each epoch or of the run: `--count-calls` "
                "tells which)")
    calls = g.calls
    if at < 2 or calls is None:
        return None
    if at == calls - 1:
        return f"once at the end (call {at + 1}, after {at} calls of {full})"
    epoch = at + 1
    if calls % epoch == 0:
        return (f"every {_ordinal(epoch)} call (the last batch of each of {calls // epoch} "
                f"epochs of {epoch} calls)")
    return None


def _ordinal(n: int) -> str:
    """``4th``, ``2nd``, ``11th``, ``21st``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _history(g: Group, path: str, dim: int, small: int, full: int
             ) -> tuple[int | None, set[str | None]]:
    """(the call, 0-based where counted, at which ``small`` first reached ``path`` dim; the
    call sites of the events that brought either size)."""
    at: int | None = None
    sites: set[str | None] = set()
    found = False
    for event in g.traces:
        leaf = event.signature.leaves.get(path) if event.signature else None
        if leaf is None or dim >= len(leaf.shape) or leaf.shape[dim] not in (small, full):
            continue
        sites.add(event.call_site)
        if leaf.shape[dim] == small and not found:
            at, found = event.call_index if event.call_of == g.key else None, True
    return at, sites


def _same_axis(table: predict.Distinct, values: list[int]) -> list[tuple[str, int]]:
    """Every (path, dim) of a numeric array that varies over the same sizes: one axis, e.g.
    the batch."""
    wanted = set(values)
    return [(p, d) for p in table.paths for d, vs in table.varying_dims(p).items()
            if set(vs) == wanted and _numeric_path(table, p)]


def _numeric_path(table: predict.Distinct, path: str) -> bool:
    return all(numeric_dtype(v[1]) for v in table.leaves(path) if v is not None)
