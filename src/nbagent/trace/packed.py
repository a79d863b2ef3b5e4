"""A trace's rows, its finished runs' packed into columns: :class:`PackedRows`.

The recorders append rows to a plain list (the *tail*: ``append`` and ``extend`` are the list's own);
the store moves the rows of finished runs (:meth:`RowStore.pack`) from the tail's front into a
:class:`Block`: the rows of one layout or record type become one :class:`Group`, each field a column
(:func:`encode`): a value shared by every row once, floats and clock times in arrays of machine
numbers, strings and small integers as codes into a table of their distinct values (move names, agents;
run ids in 16 bytes each), the values the trace alone holds as columns of their fields, every other
object by reference. A kept plain run's rows cost about 300 bytes packed where they cost about 1,900
(bench/RESULTS.md, issue 42.5).

Packing runs at C speed (``map``, ``zip``, ``compress`` and ``array`` over a group's rows); reading a row
rebuilds it (records of the same type, tuples, equal to the originals: fields are kept exactly, clock
times to the microsecond a datetime holds); reading a block whole rebuilds its groups at C speed and
merges them in order. A row is found by bisecting the blocks' first positions, then counting its kind
in the block (C speed), never by a pass over the trace.
"""

from __future__ import annotations

import bisect
import dataclasses
import threading
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from itertools import chain, compress, cycle, repeat
from operator import add, attrgetter, eq, floordiv, is_, itemgetter, sub
from typing import Any, overload

from ..messages import CreateResult, Response, built_values, rebuilt
from ..models.base import ModelRequest
from .rows import Row, run_of

_MICROSECOND = timedelta(microseconds=1)
_CODED = frozenset({str, int, type(None)})  # what a column may hold as codes into a table (hashable, no bool)


def uuid_bytes(value: object) -> bytes | None:
    """The 16 bytes of ``value`` when it is a UUID's canonical text (a run's id), else ``None``."""
    if type(value) is not str or len(value) != 36:
        return None
    digits = value.replace("-", "")
    if len(digits) != 32 or value[8] != "-" or value[13] != "-" or value[18] != "-" or value[23] != "-":
        return None
    try:
        raw = bytes.fromhex(digits)
    except ValueError:
        return None
    return raw if raw.hex() == digits else None  # lower-case hex digits only (fromhex skips spaces)


def uuid_text(raw: bytes) -> str:
    """The canonical text of the UUID of 16 bytes ``raw`` (lower-case hex, four dashes)."""
    digits = raw.hex()
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


class Values(list[Any]):
    """The distinct values of a :class:`Table`, in the order of their codes (a list)."""

    __slots__ = ()

    def listed(self) -> list[Any]:
        """Every value, in a list (this one)."""
        return self


class RunIds:
    """An append-only list of run ids (``None`` too), each UUID text in 16 bytes (its text made again when
    read), any other value as it is: what a store's blocks and snapshot rows keep of their rows' runs, one
    list for both (a finished run's 85-byte id string is let go). Its codes are its positions; the ids
    added since :meth:`settled` are looked up (:attr:`recent`), so that a run's rows and its snapshots,
    packed one after the other, share its 16 bytes."""

    __slots__ = ("_uuids", "_others", "_reading", "recent")

    def __init__(self) -> None:
        self._uuids = bytearray()  # 16 bytes an id: a UUID's, or zeros for one in ``_others``
        self._others: dict[int, str | None] = {}
        # Per thread, the ids listed while a block is read whole (:meth:`listing`): two threads reading
        # two blocks of one store at once (an export in a worker thread) each keep their own.
        self._reading = threading.local()
        self.recent: dict[str | None, int] = {}
        """The codes of the ids added since :meth:`settled`."""

    def add(self, run_id: str | None) -> int:
        """Add ``run_id``; its code (what :meth:`get` takes)."""
        code = len(self._uuids) // 16
        raw = uuid_bytes(run_id)
        if raw is None:
            self._others[code] = run_id
            raw = bytes(16)
        self._uuids += raw
        return code

    def adding(self, run_ids: Iterable[str | None]) -> dict[str | None, int]:
        """The codes of ``run_ids``: each distinct one not added since :meth:`settled` added once."""
        recent = self.recent
        for run in dict.fromkeys(run_ids):
            if run not in recent:
                recent[run] = self.add(run)
        return recent

    def settled(self) -> None:
        """Forget which ids were added lately (their rows and snapshots are packed)."""
        self.recent = {}

    def get(self, code: int) -> str | None:
        """The run id of ``code``."""
        if code in self._others:
            return self._others[code]
        at = 16 * code
        return uuid_text(bytes(self._uuids[at : at + 16]))

    __getitem__ = get

    def __len__(self) -> int:
        return len(self._uuids) // 16

    def listed(self, first: int = 0, end: int | None = None) -> list[str | None]:
        """The run ids of codes ``first`` to ``end`` (the last by default), in a list indexed by code
        (``None`` before ``first``; each UUID's text made once)."""
        held: list[str | None] | None = getattr(self._reading, "listed", None)
        if held is not None:
            return held
        uuids = self._uuids
        stop = len(uuids) if end is None else 16 * end
        listed: list[str | None] = [None] * first
        listed += [uuid_text(bytes(uuids[at : at + 16])) for at in range(16 * first, stop, 16)]
        for code, run_id in self._others.items():
            if first <= code < len(listed):
                listed[code] = run_id
        return listed

    def listing(self, on: bool, first: int = 0, end: int | None = None) -> None:
        """Keep the ids of codes ``first`` to ``end`` listed (``on``, while a block whose codes are those
        is read whole, in this thread) or let the list go."""
        self._reading.listed = None
        if on:
            self._reading.listed = self.listed(first, end)


class Column:
    """One field of a group's rows: ``kind`` says how ``data`` holds it (see :func:`encode`); ``parts``:
    a table of values (``CODES``), the nested group (``NESTED``), the column of the lists' items
    (``SINGLES``), the first time (``TIMES``), the types and one column per type (``MIXED``, ``data`` their
    codes), or, for
    ``OBJECTS``, whether the column was made again as it grew (:func:`grow`)."""

    __slots__ = ("kind", "data", "parts")

    def __init__(self, kind: int, data: Any, parts: Any = None) -> None:
        self.kind = kind
        self.data = data
        self.parts = parts

    def get(self, index: int) -> Any:
        """The value of row ``index`` of the group."""
        kind, data = self.kind, self.data
        if kind == SAME:
            return data
        if kind == CODES:
            return self.parts[data[index]]
        if kind == TIMES:
            return self.parts + timedelta(0, 0, data[index])
        if kind == EMPTY_LISTS:
            return []
        if kind == NESTED:
            return self.parts.row(index)
        if kind == SINGLES:
            return [self.parts.get(index)]
        if kind == MIXED:
            code = data[index]
            return self.parts[1][code].get(data.count(code, 0, index))
        return data[index]  # NUMBERS, OBJECTS

    def values(self, count: int) -> Iterable[Any]:
        """The values of the group's ``count`` rows, in order."""
        kind, data = self.kind, self.data
        if kind == SAME:
            return repeat(data, count)
        if kind == CODES:
            return map(self.parts.listed().__getitem__, data)
        if kind == TIMES:
            return map(add, repeat(self.parts), map(timedelta, repeat(0), repeat(0), data))
        if kind == EMPTY_LISTS:
            return map(list, repeat((), count))
        if kind == NESTED:
            nested: Iterable[Any] = self.parts.rows()
            return nested
        if kind == SINGLES:
            return map(_one, self.parts.values(count))
        if kind == MIXED:
            sources = [iter(part.values(data.count(code))) for code, part in enumerate(self.parts[1])]
            mixed: Iterable[Any] = map(next, map(sources.__getitem__, data))
            return mixed
        values: Iterable[Any] = data  # NUMBERS, OBJECTS
        return values


SAME, NUMBERS, TIMES, CODES, EMPTY_LISTS, OBJECTS, NESTED, SINGLES, MIXED = range(9)
_CONSTANTS = {id(value): Column(SAME, value) for value in (None, True, False, ())}
"""The columns of a value every row shares that is one of these, shared by every block (most columns of
a block are: an LLM call's ``error``, ``sent``, ``chunks``...)."""

Fields = Callable[[Any], "tuple[Any, ...] | None"]
NESTED_TYPES: dict[type, tuple[Fields | tuple[str, ...], Callable[..., Any]]] = {
    Response: (("chat_message", "inner_messages"), Response),
    ModelRequest: (("messages", "tools", "tool_choice", "json_output", "extra_create_args"), ModelRequest),
    CreateResult: (built_values, lambda *values: rebuilt(CreateResult, values)),
}
"""The types whose values a column keeps as columns of their fields (a :class:`Group`): per type, the
names of its fields or what reads a value's fields (``None``: this value cannot be, the column keeps its
values by reference), and what builds an equal value of them. Only types whose values the trace alone
holds (else their fields' columns would cost more than one reference); more are added with :func:`nest`."""


def nest(kind: type, fields: Fields, build: Callable[..., Any]) -> None:
    """Keep the values of ``kind`` in a column as columns of their ``fields``, built again by ``build``."""
    NESTED_TYPES[kind] = (fields, build)


def _one(value: Any) -> list[Any]:
    return [value]


class Table(dict[Any, int]):
    """The distinct values of a block's coded columns, which share it (agents, move names...): a value's
    code is its place in :attr:`distinct`, drawn as the columns are made (the dict is let go when its
    block is closed: :meth:`Block.close`)."""

    __slots__ = ("distinct", "_add")

    def __init__(self) -> None:
        super().__init__()
        self.distinct = Values()
        self._add = self.distinct.append

    def __missing__(self, value: Any) -> int:
        code = self[value] = len(self)  # its keys are the values found so far
        self._add(value)
        return code


_LIMITS = {"B": 0x100, "H": 0x10000, "I": 2**32}


def coded(codes: Iterable[int], size: int, into: array[int] | None = None) -> array[int]:
    """``codes`` (each under ``size``) in an array of the fewest bytes a code, or appended to ``into``
    (widened first if ``size`` outgrew its codes)."""
    if into is not None and size <= _LIMITS[into.typecode]:
        into.extend(codes)
        return into
    typecode = "B" if size <= 0x100 else "H" if size <= 0x10000 else "I"
    found = array(typecode, () if into is None else into)
    found.extend(codes)
    return found


DISTINCT_TEXTS_FROM = 8
"""A column of at least this many strings, most of them distinct (a run's task...), keeps them by
reference: a code and a table entry would cost more than the reference."""


def encode(values: Sequence[Any], table: Table) -> Column:
    """The column of ``values`` (one field of a group's rows): ``SAME`` when every value is one object,
    ``NUMBERS`` when all are floats (an ``array('d')``, exact), ``TIMES`` when all are datetimes in UTC
    (microseconds from the first in an array of 4- or 8-byte integers: exact), ``EMPTY_LISTS`` when all are empty lists
    (each row gets a new one), ``SINGLES`` when all are lists of one item (the items' column),
    ``CODES`` when all are strings, integers or ``None`` (codes into a table of the distinct values, 1, 2
    or 4 bytes a row), ``NESTED`` when all are of one of :data:`NESTED_TYPES`, ``MIXED`` when they are
    of several types and some type's values are kept as more than references (one column per type),
    else ``OBJECTS`` (the values by reference)."""
    first = values[0]
    if all(map(is_, values, repeat(first))):
        return _CONSTANTS.get(id(first)) or Column(SAME, first)
    kinds = list(map(type, values))
    types = set(kinds)
    if len(types) == 1:
        (kind,) = types
        if kind is float:
            return Column(NUMBERS, array("d", values))
        if kind is datetime and _all_utc(values):
            return Column(TIMES, _micros(values, first), first)
        if kind is list:
            sizes = set(map(len, values))
            if sizes == {0}:
                return Column(EMPTY_LISTS, None)
            if sizes == {1}:
                return Column(SINGLES, None, encode([value[0] for value in values], table))
        nested = NESTED_TYPES.get(kind)
        if nested is not None:
            reads, build = nested
            if isinstance(reads, tuple):
                return Column(NESTED, None, Group(build, values, reads, table, nested=kind))
            fields = list(map(reads, values))
            if None not in fields:
                return Column(NESTED, None, Group(build, fields, None, table, nested=kind))
        if kind is str and len(values) >= DISTINCT_TEXTS_FROM and 2 * len(set(values)) > len(values):
            return Column(OBJECTS, list(values))
    if types <= _CODED:
        if types == {int} and 2 * len(set(values)) > len(values) and _fits(values):
            return Column(NUMBERS, array("q", values))  # integers mostly distinct: 8 bytes each, no object
        codes = list(map(table.__getitem__, values))
        return Column(CODES, coded(codes, len(table.distinct)), table.distinct)
    if 1 < len(types) <= 0x100 and not types.isdisjoint(NESTED_TYPES):
        order = list(dict.fromkeys(kinds))
        index = dict(zip(order, range(len(order))))
        kind_codes = bytearray(map(index.__getitem__, kinds))
        parts = [encode(list(compress(values, map(eq, kind_codes, repeat(code)))), table) for code in range(len(order))]
        return Column(MIXED, kind_codes, (order, parts))
    return Column(OBJECTS, list(values))


def _all_utc(values: Iterable[Any]) -> bool:
    return all(map(is_, map(attrgetter("tzinfo"), values), repeat(UTC)))


def _micros(values: Sequence[datetime], base: datetime, into: array[int] | None = None) -> array[int]:
    """The microseconds from ``base`` of ``values``, in 4 bytes each while they are within about 35 minutes
    of it, else 8 (or appended to ``into``, widened first if need be)."""
    micros = list(map(floordiv, map(sub, values, repeat(base)), repeat(_MICROSECOND)))
    small = -(2**31) <= min(micros) and max(micros) < 2**31
    if into is None:
        return array("i" if small else "q", micros)
    if not small and into.typecode == "i":
        into = array("q", into)
    into.extend(micros)
    return into


def _fits(values: Sequence[int]) -> bool:
    return -(2**63) <= min(values) and max(values) < 2**63


def _all_of(kind: type, values: Iterable[Any]) -> bool:
    return all(map(is_, map(type, values), repeat(kind)))


def grow(column: Column, count: int, values: list[Any], table: Table) -> Column:
    """Column ``column`` of ``count`` rows with ``values`` (one or more) appended: the same column grown in
    place when its kind holds them, else the column of every value made again (:func:`encode`: a
    column only moves to a kind that holds more, so it is made again a few times at most)."""
    if _GROWS[column.kind](column, count, values, table):
        return column
    grown = encode([*column.values(count), *values], table)
    if grown.kind == OBJECTS:
        grown.parts = OBJECTS  # made again once by reference: it stays so
    return grown


def _grow_same(column: Column, count: int, values: list[Any], table: Table) -> bool:
    return all(map(is_, values, repeat(column.data)))


def _grow_objects(column: Column, count: int, values: list[Any], table: Table) -> bool:
    if column.parts is None and not NESTED_TYPES.keys().isdisjoint(map(type, values)):
        return False  # values of a nested type (a column's first rows had none): made again once
    column.data.extend(values)
    return True


def _grow_numbers(column: Column, count: int, values: list[Any], table: Table) -> bool:
    data = column.data
    if (
        data.typecode == "d"
        and _all_of(float, values)
        or data.typecode == "q"
        and _all_of(int, values)
        and _fits(values)
    ):
        data.extend(values)
        return True
    return False


def _grow_times(column: Column, count: int, values: list[Any], table: Table) -> bool:
    if _all_of(datetime, values) and _all_utc(values):
        column.data = _micros(values, column.parts, column.data)
        return True
    return False


def _grow_codes(column: Column, count: int, values: list[Any], table: Table) -> bool:
    if set(map(type, values)) <= _CODED:
        column.data = coded(list(map(table.__getitem__, values)), len(table.distinct), column.data)
        return True
    return False


def _grow_empty_lists(column: Column, count: int, values: list[Any], table: Table) -> bool:
    return _all_of(list, values) and not any(map(len, values))


def _grow_singles(column: Column, count: int, values: list[Any], table: Table) -> bool:
    if _all_of(list, values) and set(map(len, values)) == {1}:
        items: Column = column.parts
        column.parts = grow(items, count, [value[0] for value in values], table)
        return True
    return False


def _run_codes(runs: list[str | None], ids: RunIds) -> Iterator[int]:
    """The codes of ``runs`` in ``ids`` (each added once till it is settled)."""
    return map(ids.adding(runs).__getitem__, runs)


def _grow_nested(column: Column, count: int, values: list[Any], table: Table) -> bool:
    group: Group = column.parts
    kind = group.nested
    if kind is None or not _all_of(kind, values):
        return False
    reads = NESTED_TYPES[kind][0]
    if isinstance(reads, tuple):  # read by name: every value nests
        group.add(values, table)
        return True
    fields = list(map(reads, values))
    if None in fields:  # (tuples: no value's __eq__ called)
        return False
    group.add(fields, table)
    return True


def _grow_mixed(column: Column, count: int, values: list[Any], table: Table) -> bool:
    order, parts = column.parts
    kinds = list(map(type, values))
    if not set(kinds) <= set(order):
        return False
    index = dict(zip(order, range(len(order))))
    kind_codes = bytes(map(index.__getitem__, kinds))
    for code in dict.fromkeys(kind_codes):
        mine = list(compress(values, map(eq, kind_codes, repeat(code))))
        parts[code] = grow(parts[code], column.data.count(code), mine, table)
    column.data.extend(kind_codes)
    return True


_GROWS: dict[int, Callable[[Column, int, list[Any], Table], bool]] = {
    SAME: _grow_same,
    NUMBERS: _grow_numbers,
    TIMES: _grow_times,
    CODES: _grow_codes,
    EMPTY_LISTS: _grow_empty_lists,
    OBJECTS: _grow_objects,
    NESTED: _grow_nested,
    SINGLES: _grow_singles,
    MIXED: _grow_mixed,
}
"""Per column kind: what appends values to a column of it in place, if it can hold them."""


def _getters(fields: tuple[str, ...] | None, width: int) -> list[Callable[[Any], Any]]:
    """What reads each field of a row: by name (a record), else by position (a tuple)."""
    return list(map(attrgetter, fields)) if fields is not None else list(map(itemgetter, range(width)))


class Group:
    """The rows of one kind (one record type, tuples of one length, the values of a nested type), as
    columns of their fields. A block's top groups code their first field, the rows' run, into its
    :class:`RunIds` (``runs``)."""

    __slots__ = ("build", "count", "columns", "fields", "runs", "nested", "_shared")

    def __init__(
        self,
        build: Callable[..., Any],
        rows: Sequence[Any],
        fields: tuple[str, ...] | None,
        table: Table,
        runs: RunIds | None = None,
        nested: type | None = None,
    ):
        self.build = build
        self.fields = fields  # a record's fields' names (``None``: tuples)
        self.runs = runs
        self.nested = nested  # the type of a nested group's values
        self.count = len(rows)
        # While the group grows: the columns whose value every row shares, read at once (their fields'
        # reader and values), and what reads every field (:meth:`add`; made again when a column changes).
        self._shared: tuple[list[int], Callable[[Any], Any] | None, tuple[Any, ...], list[Callable[[Any], Any]]] | None
        self._shared = None
        if fields is None:
            columns = list(map(list, zip(*rows)))
        else:  # a record's fields, by name: a list of each, no tuple a row
            columns = [list(map(getter, rows)) for getter in _getters(fields, 0)]
        if runs is not None:  # the run column: always codes into the store's run ids
            self.columns = [Column(CODES, coded(_run_codes(columns[0], runs), len(runs)), runs)]
            columns = columns[1:]
        else:
            self.columns = []
        self.columns += [encode(column, table) for column in columns]

    def _share(self) -> tuple[list[int], Callable[[Any], Any] | None, tuple[Any, ...], list[Callable[[Any], Any]]]:
        """The columns of a value every row shares as one reader, and the others (:attr:`_shared`)."""
        columns, fields = self.columns, self.fields
        getters = _getters(fields, len(columns))
        same = [at for at, column in enumerate(columns) if column.kind == SAME]
        if len(same) < 2:  # a reader of one field gives the value, not a tuple of one
            self._shared = list(range(len(columns))), None, (), getters
            return self._shared
        others = [at for at, column in enumerate(columns) if column.kind != SAME]
        reads = attrgetter(*[fields[at] for at in same]) if fields is not None else itemgetter(*same)
        shared = self._shared = others, reads, tuple(columns[at].data for at in same), getters
        return shared

    def add(self, rows: Sequence[Any], table: Table) -> None:
        """Append ``rows`` (of this group's kind) to the columns."""
        columns, count, runs = self.columns, self.count, self.runs
        todo, reads, shared, getters = self._shared or self._share()
        if reads is not None and not all(map(is_, chain.from_iterable(map(reads, rows)), cycle(shared))):
            todo = list(range(len(columns)))  # a value not shared any more: every column read
        for at in todo:
            column = columns[at]
            kind = column.kind
            mine = list(map(getters[at], rows))
            if kind == SAME and all(map(is_, mine, repeat(column.data))):
                continue
            if kind == OBJECTS and column.parts is not None:  # by reference, made again once: stays so
                column.data += mine
            elif kind == NUMBERS and column.data.typecode == "d" and _all_of(float, mine):  # (most: times)
                column.data.extend(mine)
            elif at or runs is None:
                grown = columns[at] = grow(column, count, mine, table)
                if grown is not column:
                    self._shared = None
            else:
                column.data = coded(_run_codes(mine, runs), len(runs), column.data)
        self.count = count + len(rows)

    def close(self) -> None:
        """No more rows are added: what reads them is let go."""
        self._shared = None

    def row(self, index: int) -> Any:
        """Row ``index`` of the group, rebuilt."""
        return self.build(*[column.get(index) for column in self.columns])

    def rows(self) -> Iterator[Any]:
        """Every row of the group, rebuilt, in order."""
        return map(self.build, *[column.values(self.count) for column in self.columns])


def _tuple(*values: Any) -> tuple[Any, ...]:
    return values


_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _fields_of(kind: type) -> tuple[str, ...] | None:
    """A record's fields' names in its constructor's order (``None``: not a dataclass built from its
    fields alone, its run id first: kept by reference)."""
    if kind not in _FIELDS:
        names = [field.name for field in dataclasses.fields(kind)] if dataclasses.is_dataclass(kind) else []
        plain = (
            names[:1] == ["run_id"]
            and all(field.init for field in dataclasses.fields(kind))
            and not hasattr(kind, "__post_init__")
        )
        _FIELDS[kind] = tuple(names) if plain and len(names) > 1 else None
    return _FIELDS[kind]


class Block:
    """Rows packed from consecutive positions: per row the index of its type in ``types`` (``codes``),
    per tuple row its length (``lengths``), and one :class:`Group` per record type and tuple length
    (rows of a type that is not a plain dataclass are kept by reference, in a list).

    A block is *open* until :meth:`close`: the rows of more finished runs are appended to it
    (:meth:`add`), each column growing in place (or made again when a value does not fit its kind:
    :func:`grow`), so that a trace keeps few blocks, each column's objects paid once for many runs."""

    __slots__ = ("count", "types", "codes", "lengths", "groups", "tuples", "runs", "first_run", "end_run", "table")

    def __init__(self, rows: list[Row], runs: RunIds) -> None:
        self.count = 0
        self.types: list[type] = []
        self.codes = bytearray()  # at most a few kinds of row
        # Per type: its group, its rows themselves (not a plain dataclass), or None (tuples: by length).
        self.groups: list[Group | list[Row] | None] = []
        self.tuples: dict[int, Group] = {}
        self.lengths = bytearray()
        self.runs = runs  # the rows' runs (every row starts with it): the store's ids, each in 16 bytes
        self.first_run = self.end_run = len(runs)  # the block's run codes are from the first to the end
        self.table: Table | None = Table()  # one for every coded column of the block, while it is open
        self.add(rows)

    def add(self, rows: list[Row]) -> None:
        """Append ``rows`` (the block is open)."""
        table, runs = self.table, self.runs
        assert table is not None, "a closed block is not added to"
        kinds = list(map(type, rows))
        index = dict(zip(self.types, range(len(self.types))))
        for kind in dict.fromkeys(kinds):
            if kind not in index:
                index[kind] = len(self.types)
                self.types.append(kind)
                self.groups.append(None)
        codes = bytes(map(index.__getitem__, kinds))
        for code in dict.fromkeys(codes):
            kind = self.types[code]
            mine: list[Any] = list(compress(rows, map(eq, codes, repeat(code))))
            if kind is tuple:
                lengths = bytes(map(len, mine))
                self.lengths += lengths
                for length in dict.fromkeys(lengths):
                    same = list(compress(mine, map(eq, lengths, repeat(length))))
                    tuples = self.tuples.get(length)
                    if tuples is None:
                        self.tuples[length] = Group(_tuple, same, None, table, runs)
                    else:
                        tuples.add(same, table)
                continue
            group = self.groups[code]
            if isinstance(group, Group):
                group.add(mine, table)
            elif isinstance(group, list):
                group += mine
            else:
                fields = _fields_of(kind)
                self.groups[code] = mine if fields is None else Group(kind, mine, fields, table, runs)
        self.codes += codes
        self.count += len(rows)
        if runs.recent:  # a run added before the block was (by its snapshots): its code is below
            self.first_run = min(self.first_run, *runs.recent.values())
        self.end_run = len(runs)

    def close(self) -> None:
        """No more rows are added: the table's lookup and the arrays' and lists' spare room are let go."""
        self.table = None
        self.codes = bytearray(self.codes)
        self.lengths = bytearray(self.lengths)
        groups: list[Group] = [group for group in [*self.groups, *self.tuples.values()] if isinstance(group, Group)]
        while groups:
            group = groups.pop()
            group.close()
            columns = list(group.columns)
            while columns:
                column = columns.pop()
                kind, data, parts = column.kind, column.data, column.parts
                if kind in (NUMBERS, TIMES, CODES):
                    column.data = array(data.typecode, data)
                elif kind in (OBJECTS, MIXED):
                    column.data = type(data)(data)
                if kind == SINGLES:
                    columns.append(parts)
                elif kind == NESTED:
                    groups.append(parts)
                elif kind == MIXED:
                    columns += parts[1]
        for index, kept in enumerate(self.groups):
            if isinstance(kept, list):
                self.groups[index] = list(kept)

    @property
    def open(self) -> bool:
        """Whether rows may still be added."""
        return self.table is not None

    def row(self, index: int) -> Row:
        """Row ``index`` of the block, rebuilt."""
        code = self.codes[index]
        nth = self.codes.count(code, 0, index)
        group = self.groups[code]
        if group is None:  # a tuple: its length, then its place among the tuples of that length
            length = self.lengths[nth]
            found: Row = self.tuples[length].row(self.lengths.count(length, 0, nth))
            return found
        if isinstance(group, list):
            return group[nth]
        row: Row = group.row(nth)
        return row

    def run_ids(self) -> list[str | None]:
        """The run of every row of the block, in order (its first field: no row rebuilt)."""
        sources: list[Iterator[Any]] = []
        self.runs.listing(True, self.first_run, self.end_run)
        try:
            for group in self.groups:
                if group is None:
                    by_length = {
                        length: iter(tuples.columns[0].values(tuples.count)) for length, tuples in self.tuples.items()
                    }
                    sources.append(iter(list(map(next, map(by_length.__getitem__, self.lengths)))))
                else:
                    sources.append(
                        iter(map(attrgetter("run_id"), group))
                        if isinstance(group, list)
                        else iter(group.columns[0].values(group.count))
                    )
            return list(map(next, map(sources.__getitem__, self.codes)))
        finally:
            self.runs.listing(False)

    def records(self, kind: type) -> list[tuple[int, Any]]:
        """The rows of record type ``kind`` with their positions in the block (only those rebuilt)."""
        if kind not in self.types:
            return []
        code = self.types.index(kind)
        group = self.groups[code]
        assert group is not None
        at = compress(range(self.count), map(eq, self.codes, repeat(code)))
        if isinstance(group, list):
            return list(zip(at, group))
        self.runs.listing(True, self.first_run, self.end_run)
        try:
            return list(zip(at, group.rows()))
        finally:
            self.runs.listing(False)

    def rows(self) -> list[Row]:
        """Every row of the block, rebuilt, in order."""
        sources: list[Iterator[Row]] = []
        self.runs.listing(True, self.first_run, self.end_run)  # each run's id made once
        try:
            for group in self.groups:
                if group is None:
                    by_length = {length: tuples.rows() for length, tuples in self.tuples.items()}
                    sources.append(iter(list(map(next, map(by_length.__getitem__, self.lengths)))))
                else:
                    sources.append(iter(group) if isinstance(group, list) else group.rows())
            return list(map(next, map(sources.__getitem__, self.codes)))
        finally:
            self.runs.listing(False)


BLOCK_ROWS = 32768
"""A block is closed once it holds this many rows (about 4,000 plain runs): a row is found in its block by
counting the codes before it, and the open block's table keeps a lookup of its values."""
READ_WHOLE_FROM = 32
"""A block of which at least one row in this many is asked for is rebuilt whole (:meth:`PackedRows.rows_at`):
rebuilding a row alone finds its place by counting the codes before it, a pass a whole block's rebuild shares."""


class PackedRows(Sequence[Row]):
    """A trace's rows: the packed :class:`Block` s of finished runs, then the tail the recorders append to.

    Reads like a list of rows (``len``, indexing, slices, iteration, ``==``); ``append`` and ``extend``
    are the tail's own (the recorders' hot path), a row of the tail may be replaced (``rows[i] = row``),
    every row may be replaced at once (``rows[:] = rows``, into the tail) or cleared."""

    __slots__ = ("_blocks", "_starts", "packed", "tail", "append", "extend", "run_ids")

    def __init__(self, run_ids: RunIds | None = None) -> None:
        self._blocks: list[Block] = []
        self._starts: list[int] = []  # each block's first position
        self.packed = 0
        """How many rows are packed (the first ones)."""
        self.tail: list[Row] = []
        """The rows not packed (the last ones): the list the recorders append to, changed in place only."""
        self.append: Callable[[Row], None] = self.tail.append
        """Add a row at the end."""
        self.extend: Callable[[Iterable[Row]], None] = self.tail.extend
        """Add rows at the end."""
        self.run_ids = RunIds() if run_ids is None else run_ids
        """The ids of the packed rows' runs (the store's, shared with its snapshot rows)."""

    def pack(self, count: int) -> None:
        """Pack the tail's first ``count`` rows (they are no longer changed): appended to the last block
        while it is open, else into a new one; a block is closed once it holds :data:`BLOCK_ROWS` rows."""
        if count <= 0:
            return
        tail, blocks = self.tail, self._blocks
        if blocks and blocks[-1].open:
            blocks[-1].add(tail[:count])
        else:
            blocks.append(Block(tail[:count], self.run_ids))
            self._starts.append(self.packed)
        del tail[:count]
        self.packed += count
        if blocks[-1].count >= BLOCK_ROWS:
            blocks[-1].close()

    @property
    def blocks(self) -> list[Block]:
        """The packed blocks, in order (a copy of the list)."""
        return list(self._blocks)

    def __len__(self) -> int:
        return self.packed + len(self.tail)

    @overload
    def __getitem__(self, index: int) -> Row: ...

    @overload
    def __getitem__(self, index: slice) -> list[Row]: ...

    def __getitem__(self, index: int | slice) -> Row | list[Row]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return list(self)[index]
            return list(self.iter_from(start))[: max(0, stop - start)]
        packed = self.packed
        if index < 0:
            index += len(self)
        if index >= packed:
            return self.tail[index - packed]
        if index < 0:
            raise IndexError("row index out of range")
        at = bisect.bisect_right(self._starts, index) - 1
        return self._blocks[at].row(index - self._starts[at])

    def rows_at(self, positions: Sequence[int]) -> list[Row]:
        """The rows at ``positions`` (ascending): a block many of whose rows are asked for is rebuilt
        once, whole; a few rows of a block one by one (so that a run's rows cost at most what their
        blocks cost, not their number times their blocks' sizes)."""
        found: list[Row] = []
        packed, starts, blocks, tail = self.packed, self._starts, self._blocks, self.tail
        at = 0
        while at < len(positions) and positions[at] < packed:
            index = bisect.bisect_right(starts, positions[at]) - 1
            first, block = starts[index], blocks[index]
            end = bisect.bisect_left(positions, first + block.count, at)
            if (end - at) * READ_WHOLE_FROM >= block.count:
                rows = block.rows()
                found.extend(rows[position - first] for position in positions[at:end])
            else:
                found.extend(block.row(position - first) for position in positions[at:end])
            at = end
        found.extend(tail[position - packed] for position in positions[at:])
        return found

    def iter_from(self, start: int) -> Iterator[Row]:
        """The rows from position ``start`` on (whole blocks before it skipped, not rebuilt)."""
        packed = self.packed
        if start >= packed:
            yield from self.tail[start - packed :]
            return
        at = max(0, bisect.bisect_right(self._starts, start) - 1)
        skip = start - self._starts[at]
        for block in self._blocks[at:]:
            rows = block.rows()
            yield from rows[skip:] if skip else rows
            skip = 0
        yield from list(self.tail)

    def __iter__(self) -> Iterator[Row]:
        return self.iter_from(0)

    def runs_from(self, start: int) -> Iterator[str | None]:
        """The run of every row from position ``start`` on (packed rows' read from their run column)."""
        packed = self.packed
        if start < packed:
            at = max(0, bisect.bisect_right(self._starts, start) - 1)
            skip = start - self._starts[at]
            for block in self._blocks[at:]:
                yield from block.run_ids()[skip:]
                skip = 0
        yield from map(run_of, self.tail[max(0, start - packed) :])

    def records_from(self, start: int, kind: type) -> Iterator[tuple[int, Any]]:
        """The rows of record type ``kind`` from position ``start`` on, with their positions (only those
        rebuilt, in order)."""
        packed = self.packed
        if start < packed:
            at = max(0, bisect.bisect_right(self._starts, start) - 1)
            for block, first in zip(self._blocks[at:], self._starts[at:]):
                yield from ((first + index, row) for index, row in block.records(kind) if first + index >= start)
        tail = self.tail
        for index in range(max(0, start - packed), len(tail)):
            if type(tail[index]) is kind:
                yield packed + index, tail[index]

    def last_record(self, kind: type) -> Any | None:
        """The last row of record type ``kind`` (of a block, its rows of that type alone rebuilt), or ``None``."""
        for row in reversed(self.tail):
            if type(row) is kind:
                return row
        for block in reversed(self._blocks):
            found = block.records(kind)
            if found:
                return found[-1][1]
        return None

    def __reversed__(self) -> Iterator[Row]:
        yield from reversed(self.tail)
        for block in reversed(self._blocks):
            yield from reversed(block.rows())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (PackedRows, list)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    @overload
    def __setitem__(self, index: int, row: Row) -> None: ...

    @overload
    def __setitem__(self, index: slice, row: Iterable[Row]) -> None: ...

    def __setitem__(self, index: int | slice, row: Row | Iterable[Row]) -> None:
        """``rows[i] = row`` (a row not packed) or ``rows[:] = rows`` (every row replaced)."""
        if isinstance(index, slice):
            if index != slice(None):
                raise IndexError("rows are replaced whole ([:] =), one by one in the tail, or appended to")
            kept: list[Row] = list(row)  # type: ignore[arg-type]  # may read this sequence itself
            self._blocks.clear()
            self._starts.clear()
            self.packed = 0
            self.tail[:] = kept
            return
        if index < 0:
            index += len(self)
        if index < self.packed:
            raise IndexError(f"row {index} is packed: packed rows are not changed")
        self.tail[index - self.packed] = row  # type: ignore[assignment]

    def clear(self) -> None:
        """Forget every row."""
        self._blocks.clear()
        self._starts.clear()
        self.packed = 0
        self.tail.clear()
