"""Reading YAML documents (spec and budget files) defensively, and the line of a field in one;
imports nothing of the package (field errors are ``inputs.fields``'s).

These files come from anyone's repository: a file over ``MAX_YAML_BYTES``, text that is not
UTF-8, a repeated key, nesting deeper than ``MAX_YAML_DEPTH`` and aliases that expand past
``MAX_YAML_NODES`` values or refer to themselves are refused before anything is built.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

MAX_YAML_BYTES = 16 * 1024 * 1024  # spec and budget files are hand-written: 16 MiB is plenty
MAX_YAML_DEPTH = 100  # nested sequences/mappings
MAX_YAML_NODES = 100_000  # values after expanding every alias
_MERGE_TAG = "tag:yaml.org,2002:merge"


def read_text(path: Path, error: type[Exception], what: str, hint: str = "",
              max_bytes: int = MAX_YAML_BYTES) -> str:
    """The file's UTF-8 text, or ``error`` saying which file could not be read and why.

    The size is checked before reading, and no more than ``max_bytes`` are read (a device or a
    pipe, e.g. ``/dev/zero``, has no size): a file above ``max_bytes`` is refused."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as file:
            data = b"" if size > max_bytes else file.read(max_bytes + 1)
        if size > max_bytes or len(data) > max_bytes:
            shown = f" {size:,} bytes," if size > max_bytes else ""  # a device: no size
            raise error(f"The {what} {path} is{shown} more than the limit of "
                        f"{max_bytes:,} bytes for such a file. Pass the right file (a "
                        f"hand-written YAML {what} is a few kilobytes).")
    except OSError as exc:
        raise error(f"Cannot read the {what} {path}: {exc.strerror or exc}.{hint}") from None
    return decode_utf8(data, path, error, what)


def decode_utf8(data: bytes, path: Any, error: type[Exception], what: str) -> str:
    """``data`` decoded as UTF-8, or ``error`` naming the line and byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(f"{path}, line {line}: the {what} is not UTF-8 text (byte "
                    f"0x{data[exc.start]:02x} at offset {exc.start}). Save it as UTF-8 and run "
                    "again.") from None


class StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses duplicate keys and nesting deeper than MAX_YAML_DEPTH."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"the document is nested more than {MAX_YAML_DEPTH} levels deep",
                    self.peek_event().start_mark)  # type: ignore[no-untyped-call]
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, MappingNode):
            seen: dict[Any, Node] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node)
                try:
                    first = seen.get(key)
                except TypeError:
                    continue  # unhashable: PyYAML reports it
                if first is not None:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r} (first given on line "
                        f"{first.start_mark.line + 1}); give each key once",
                        key_node.start_mark)
                seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def compose(text: str) -> Node | None:
    """The checked node graph of ``text``: no cycles, at most MAX_YAML_NODES values expanded.

    Raises ``yaml.YAMLError`` (with a mark) for everything it refuses."""
    loader = StrictLoader(text)
    try:
        node = loader.get_single_node()
    finally:
        loader.dispose()
    if node is not None:
        _check_expansion(node)
    return node


def load_yaml(path: Path, text: str, error: type[Exception]) -> Any:
    """The document in ``text``, or ``error`` naming the file and line of what is wrong."""
    try:
        loader = StrictLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_expansion(node)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise error(f"{path}{where}: not valid YAML ({problem}). Fix the syntax and run "
                    "again.") from None
    except RecursionError:
        raise error(f"{path}: the YAML document is nested too deeply to read. Flatten it "
                    "and run again.") from None


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_expansion(root: Node) -> None:
    """Count the values of ``root`` with every alias expanded, without expanding anything."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            active.discard(key)
            total = 1 + sum(sizes[id(child)] for child in _children(node))
            if total > MAX_YAML_NODES:
                raise yaml.composer.ComposerError(
                    None, None, f"the document expands to more than {MAX_YAML_NODES:,} values "
                    "through its aliases (*name); write the values out or use fewer aliases",
                    node.start_mark)
            sizes[key] = total
            continue
        if key in sizes:
            continue
        active.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in active:
                raise yaml.composer.ComposerError(
                    None, None, "an alias (*name) refers to a value that contains it; a "
                    "document cannot contain itself", child.start_mark)
            if id(child) not in sizes:
                stack.append((child, False))


def line_of(text: str, where: tuple[Any, ...]) -> int | None:
    """The 1-based line of the deepest node along ``where`` in the YAML source."""
    try:
        node = compose(text)
    except (yaml.YAMLError, RecursionError):
        return None
    line = None
    for part in where:
        if node is None:
            break
        line = node.start_mark.line + 1
        if isinstance(node, MappingNode):
            node = next((v for k, v in node.value if k.value == str(part)), None)
        elif isinstance(node, SequenceNode) and isinstance(part, int):
            node = node.value[part] if 0 <= part < len(node.value) else None
        else:
            node = None
    if node is not None:
        line = node.start_mark.line + 1
    return line
