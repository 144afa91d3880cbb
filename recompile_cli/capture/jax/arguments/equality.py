"""Values compared the way JAX compares them (checked on JAX 0.10.2): ``EqualityClasses`` puts each
static argument, or static data of a pytree node, in the first earlier class JAX would find
equal to it (type, ``__hash__``, ``__eq__``), since texts can agree where JAX does not. Its
memory stays bounded and a value's ``__hash__`` or ``__eq__`` that raises never reaches the
user's program (noted above ``Klass``). Runs on cache misses only; one instance per recording.
"""

from __future__ import annotations

import builtins
import enum
import itertools
import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any

from recompile_cli.capture.jax.arguments.telling import telling, type_name
from recompile_cli.session.model import StaticClass

__all__ = ["EqualityClasses", "Klass"]

PER_TABLE = 64  # classes kept per table (the latest)
TABLES = 4096  # tables kept (the most recently created)


# Memory stays bounded: an earlier value is held by a weak reference where its type allows one (so
# the recording keeps no model or config alive); values that allow none (tuples, ints, strings)
# are held while the recording runs, as JAX's own caches hold them (a tuple's hash and text can
# agree where ``==`` does not: equinox's static tuple holding a new object). A value that is gone
# is matched by type, hash and text. Each table keeps its latest ``PER_TABLE`` classes, and at
# most ``TABLES`` tables are kept (the oldest go first); the recording drops them all when it
# stops. A ``__hash__`` or ``__eq__`` that raises or returns something odd counts as "not equal"
# and never reaches the user's program.
#
# A new class also notes the earlier classes of its table that hold an *equal value of another
# type* (``equal_to``: an ``Enum`` member and its value, ``2`` and ``np.int64(2)``, ``1`` and
# ``True``): JAX tells them apart by type alone, and the conversion that gives them one type is
# named (``convert``: ``int``, ``np.int64``, ``Mode``).
class Klass:
    """One equality class: its number, what is known of its first value, and how many earlier
    classes of its table print the same (``ordinal``: 0 for the first with this text)."""

    __slots__ = ("convert", "equal_to", "function", "hash", "identity", "number", "ordinal", "ref",
                 "telling", "text", "type")

    def __init__(self, number: int, value: Any, value_hash: int | None, text: str,
                 ordinal: int, equal_to: tuple[Klass, ...] = (), function: bool = False
                 ) -> None:
        self.number = number
        self.type: type = type(value)
        self.hash = value_hash
        self.text = text
        self.ordinal = ordinal
        self.telling: str | None = None  # its value part by part, once described
        self.identity = compares_by_identity(value)
        self.function = function
        self.equal_to = tuple(k.number for k in equal_to)
        # the type seen first leads: ``equal_to`` comes most recent first
        self.convert = (conversion((*(k.type for k in equal_to[::-1]), self.type))
                        if equal_to else "")
        try:
            self.ref: Callable[[], Any] = weakref.ref(value)
        except TypeError:  # tuples, ints, strings, objects with __slots__: held
            self.ref = _Held(value)

    def matches(self, value: Any, value_hash: int | None, text: str) -> bool:
        """Whether JAX would find ``value`` equal to this class's value: the same type and
        hash, and ``==`` (or, when that value is gone, the same text)."""
        if type(value) is not self.type or value_hash != self.hash:
            return False
        earlier = self.ref()
        if earlier is None:  # gone (JAX's caches dropped it too)
            return text == self.text
        return earlier is value or _equal(earlier, value)

    def equal_but_type(self, value: Any, value_hash: int | None) -> bool:
        """``value`` is of another type than this class's value but equal to it (``==`` and
        the same hash): JAX finds them different by type alone."""
        if type(value) is self.type or value_hash is None or value_hash != self.hash:
            return False
        earlier = self.ref()
        return earlier is not None and _equal(earlier, value)

    def described(self) -> StaticClass:
        """The class as the session keeps it, with what tells its value apart from others
        that print alike (``telling``; taken once, while the value is alive)."""
        if self.telling is None:
            value = self.ref()
            self.telling = telling(value) if value is not None else ""
        return StaticClass(self.number, type_name(self.type), self.identity, self.equal_to,
                           self.convert, self.function, self.ordinal, self.telling)


class EqualityClasses:
    """The equality classes of each table (a ``Hashable`` key), for one recording."""

    def __init__(self) -> None:
        self._tables: dict[Hashable, list[Klass]] = {}
        self._numbers = itertools.count()
        self._lock = threading.Lock()

    def classify(self, table: Hashable, value: Any, text: str, function: bool = False
                 ) -> Klass:
        """The class of ``value`` (whose ``repr`` is ``text``; ``function``: it is or holds a
        function) in ``table``: the most recent matching one, or a new one."""
        value_hash = _hash(value)
        with self._lock:
            classes = self._tables.get(table)
            if classes is None:
                if len(self._tables) >= TABLES:
                    del self._tables[next(iter(self._tables))]
                classes = self._tables[table] = []
            earlier = classes[::-1]
        for klass in earlier:  # the user's __eq__ runs outside the lock
            if klass.matches(value, value_hash, text):
                return klass
        typed = tuple(k for k in earlier if k.equal_but_type(value, value_hash))
        with self._lock:
            ordinal = sum(1 for klass in classes if klass.text == text)
            klass = Klass(next(self._numbers), value, value_hash, text, ordinal, typed,
                          function)
            classes.append(klass)
            if len(classes) > PER_TABLE:
                del classes[0]
        return klass


class _Held:
    """A strong reference with a weak reference's call: ``held()`` is the value."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self) -> Any:
        return self.value


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # a raising or odd __eq__ (an array's): not equal
        return False


def _hash(value: Any) -> int | None:
    try:
        return hash(value)
    except Exception:  # unhashable (JAX refuses such statics; aux data may be): by == alone
        return None


def compares_by_identity(value: Any) -> bool:
    """Whether ``value``'s type keeps ``object.__eq__``: every new object is a new value (an
    ``Enum``'s members are its only objects, so identity is its value equality)."""
    return (getattr(type(value), "__eq__", None) is object.__eq__
            and not isinstance(value, enum.Enum))


def conversion(types: tuple[type, ...]) -> str:
    """The callable that gives equal values of these types one type, as the user writes it:
    an ``Enum`` (``Mode``, which takes its members and their values), else a builtin
    (``int``, ``float``: the first of them), else the first type (``np.int64``)."""
    for kind in types:
        if issubclass(kind, enum.Enum):
            return type_name(kind)
    for kind in types:
        if getattr(builtins, kind.__name__, None) is kind:
            return str(kind.__name__)
    first = types[0]
    return f"np.{first.__name__}" if first.__module__ == "numpy" else type_name(first)
