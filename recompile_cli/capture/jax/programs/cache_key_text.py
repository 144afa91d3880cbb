"""The normalised fingerprint of a lowered program, from its MLIR text alone (no JAX).

``normalise(asm)`` reads the text that ``module.operation.get_asm(enable_debug_info=True)``
prints (StableHLO with ``loc(...)`` metadata and its ``#locN = loc(...)`` aliases) and returns
what ``capture.jax.programs.cache_key`` stores in ``CacheKeyInfo``:

* ``fingerprint``: SHA-256 of the program with every location stripped, private symbols renamed
  in order of definition (``@clip_1`` and ``@clip_0`` both become ``@_p0``) and each constant's
  value replaced by a placeholder: two programs that differ only in those have the same one;
* ``constants_digest``: SHA-256 of the constants' values and types, in program order;
* ``symbols_digest``: SHA-256 of the program with locations stripped, all else as printed;
* the constants (value summary, type, the user line of the first operation that reads them);
* per operation a short digest, its name and the user line it came from (the first ``MAX_OPS``).

A large constant printed elided (``ELIDED``) gets the digest of its value from ``elided``
(hashed from the module itself, ``capture.jax.programs.module_constants``), so that the cost
of reading a module does not grow with the size of its constants.

A user line is the innermost ``"file":line`` of an operation's location whose file
``is_user(path)`` accepts (by default: outside ``site-packages``), else the innermost one.
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from recompile_cli.session.cache_key import KeyConstant

MAX_OPS = 200
MAX_CONSTANTS = 64
MAX_VALUE = 48  # characters of a constant's value summary
DIGEST = 16  # hex digits kept of each SHA-256

_ALIAS = re.compile(r"^(#loc\d*) = loc\((.*)\)\s*$")
_FRAME = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):\d+|(#loc\d*)\b')
_CONSTANT = re.compile(r"^(\s*)(%[\w.$#-]+) = ((?:stablehlo|mhlo|arith)\.constant) (.*?) : (.*)$")
_PRIVATE = re.compile(r"func\.func private @([\w.$-]+)")
_SYMBOL = re.compile(r"@([\w.$-]+)")
_OP_NAME = re.compile(r'^\s*(?:%[^=]+= )?"?([a-z_][\w.]*)')
_TENSOR = re.compile(r"tensor<(?:([\dx?]+)x)?([a-z]+\d*)>")
_HASHED = re.compile(r"dense_resource<sha256:(\w+):(\d+)>")
ELIDED = "dense_resource<__elided__>"  # a large constant's value, left out by the printer


@dataclass
class Normalised:
    fingerprint: str
    constants_digest: str
    symbols_digest: str
    constants: list[KeyConstant] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    ops_total: int = 0
    sites: list[str] = field(default_factory=list)


def default_is_user(path: str) -> bool:
    return "site-packages" not in path and "dist-packages" not in path


def digest(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()[:DIGEST]


def normalise(asm: str, is_user: Callable[[str], bool] = default_is_user,
              elided: Sequence[str] = ()) -> Normalised:
    """The fingerprint, constants and operations of one module's text (see the module doc).

    ``elided``: for a module printed with large constants elided (``ELIDED``), each one's
    ``sha256:DIGEST:NBYTES`` in program order (``module_constants``), put in its place."""
    aliases: dict[str, str] = {}
    body: list[str] = []
    digests = iter(elided)
    for line in asm.splitlines():
        alias = _ALIAS.match(line)
        if alias:
            aliases[alias[1]] = alias[2]
        elif line.strip():
            if ELIDED in line:
                line = line.replace(ELIDED, f"dense_resource<{next(digests, 'elided')}>", 1)
            body.append(line)
    sites = _Sites(aliases, is_user)
    stripped = [strip_locations(line) for line in body]
    private: dict[str, str] = {}
    for line in stripped:
        for name in _PRIVATE.findall(line):
            private.setdefault(name, f"_p{len(private)}")
    canonical: list[str] = []
    constants: list[tuple[int, str, str, str]] = []  # line index, ssa name, value, type
    for index, line in enumerate(stripped):
        text = _SYMBOL.sub(lambda m: "@" + private.get(m[1], m[1]), line)
        match = _CONSTANT.match(text)
        if match:
            constants.append((index, match[2], match[4], match[5]))
            text = f"{match[1]}{match[2]} = {match[3]} #c : {match[5]}"
        canonical.append(text)
    kept = [_constant(value, type_text, sites.site(_first_use(stripped, index, name), body))
            for index, name, value, type_text in constants[:MAX_CONSTANTS]]
    ops: list[str] = []
    total = 0
    for index, text in enumerate(canonical):
        name = _OP_NAME.match(text)
        if name is None:
            continue
        total += 1
        if len(ops) < MAX_OPS:
            site = sites.site(index, body)
            short = name[1].removeprefix("stablehlo.")
            ops.append(f"{digest(text.strip())[:6]} {short} {sites.index(site)}")
    return Normalised(
        fingerprint=digest("\n".join(canonical)),
        constants_digest=digest("\n".join(f"{v} : {t}" for _, _, v, t in constants)),
        symbols_digest=digest("\n".join(stripped)),
        constants=kept, ops=ops, ops_total=total, sites=sites.table)


_SIMPLE_LOC = re.compile(r' ?loc\((?:#loc\d*|unknown|"[^"\\]*")\)')


def strip_locations(line: str) -> str:
    """``line`` without any ``loc(...)`` (balanced parentheses, quotes respected)."""
    if "loc(" not in line:
        return line
    line = _SIMPLE_LOC.sub("", line)  # what JAX prints: loc(#loc12), loc("x"), loc(unknown)
    if "loc(" not in line:
        return line
    out: list[str] = []
    i, n = 0, len(line)
    while i < n:
        if line.startswith("loc(", i) and (i == 0 or not (line[i - 1].isalnum()
                                                         or line[i - 1] in "_.")):
            j, depth, quoted = i + 4, 1, False
            while j < n and depth:
                ch = line[j]
                if quoted:
                    if ch == "\\":
                        j += 1
                    elif ch == '"':
                        quoted = False
                elif ch == '"':
                    quoted = True
                elif ch == "(":
                    depth += 1
                elif ch == ")":
                    depth -= 1
                j += 1
            while out and out[-1] == " ":
                out.pop()
            i = j
            continue
        if line[i] == '"':  # copy a quoted string whole: a loc( inside it is text
            j = i + 1
            while j < n and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            out.append(line[i:j + 1])
            i = j + 1
            continue
        out.append(line[i])
        i += 1
    return "".join(out)


class _Sites:
    """Resolves an operation's ``loc(...)`` to its user line, and numbers the lines found."""

    def __init__(self, aliases: dict[str, str], is_user: Callable[[str], bool]) -> None:
        self._aliases = aliases
        self._is_user = is_user
        self._frames: dict[str, list[str]] = {}
        self.table: list[str] = []
        self._numbers: dict[str, int] = {}

    def index(self, site: str | None) -> int:
        if site is None:
            return -1
        number = self._numbers.get(site)
        if number is None:
            number = self._numbers[site] = len(self.table)
            self.table.append(site)
        return number

    def site(self, index: int | None, body: list[str]) -> str | None:
        if index is None:
            return None
        line = body[index]
        start = line.rfind("loc(")
        if start < 0:
            return None
        frames = self._expand(line[start:], 0)
        for frame in frames:
            if self._is_user(frame.rpartition(":")[0]):
                return frame
        return frames[0] if frames else None

    def _expand(self, text: str, depth: int) -> list[str]:
        out: list[str] = []
        for match in _FRAME.finditer(text):
            if match[3]:
                ref = match[3]
                if ref not in self._frames:
                    self._frames[ref] = [] if depth > 50 else self._expand(
                        self._aliases.get(ref, ""), depth + 1)
                out.extend(self._frames[ref])
            else:
                out.append(f"{match[1]}:{match[2]}")
        return out


def _first_use(lines: list[str], index: int, name: str) -> int:
    """The first line after ``index`` that reads SSA value ``name`` (in the same function)."""
    use = re.compile(re.escape(name) + r"(?![\w.$#-])")
    for later in range(index + 1, len(lines)):
        if lines[later].lstrip().startswith("func.func"):
            break
        if use.search(lines[later]):
            return later
    return index


def _constant(value: str, type_text: str, site: str | None) -> KeyConstant:
    shape, dtype = _tensor(type_text)
    short = f"{dtype}[{','.join(shape)}]" if dtype else type_text.strip()[:MAX_VALUE]
    inner = value[6:-1] if value.startswith("dense<") and value.endswith(">") else value
    hashed = _HASHED.fullmatch(value)
    if hashed:  # elided when printed, hashed from the module (``module_constants``)
        text = f"{hashed[2]} bytes, sha256 {hashed[1][:8]}"
    elif inner.startswith('"0x'):
        text = f"{len(inner) // 2 - 2} bytes, sha256 {digest(inner)[:8]}"
    else:
        text = _number(inner, dtype)
        if shape and not inner.startswith("["):
            text = f"{text} (every element)"
    if len(text) > MAX_VALUE:
        text = text[:MAX_VALUE - 3] + "..."
    return KeyConstant(value=text, type=short, site=site)


def _tensor(type_text: str) -> tuple[list[str], str]:
    match = _TENSOR.search(type_text)
    if match is None:
        return [], ""
    dims = match[1].split("x") if match[1] else []
    return dims, match[2]


def _number(text: str, dtype: str) -> str:
    """A scalar as Python prints it: ``1.000000e-01`` -> ``0.1``, ``0x3DCCCCCD`` (f32) too."""
    text = text.strip()
    try:
        if text.lower().startswith("0x") and dtype in ("f32", "f64"):
            raw = bytes.fromhex(text[2:].rjust(8 if dtype == "f32" else 16, "0"))
            value = struct.unpack(">f" if dtype == "f32" else ">d", raw)[0]
            return f"{value:.7g}" if dtype == "f32" else repr(value)
        if dtype.startswith(("f", "bf")):
            return f"{float(text):.7g}" if dtype in ("f32", "f16", "bf16") else repr(float(text))
    except (ValueError, struct.error):
        pass
    return text
