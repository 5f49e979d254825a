"""YAML events -> Python values, one node at a time, with the line of every value.

libyaml parses (its CParser, as before); the values are built straight from its events, with
no node tree, so a loader can read an eval file one `tests` item at a time and keep only that
item's values and lines alive. What composing and constructing gave is kept: YAML 1.2 core
scalars, anchors and aliases (an alias is built again where it is used, from the events
recorded for its anchor, as the composed node was), merge keys (`<<`: own keys win, then the
merged mappings in YAML's order), duplicate keys, recursive aliases, and the same messages.
Nesting deeper than MAX_DEPTH (through aliases too) and more than MAX_NODES values made by
aliases are refused, so hostile input never reaches a recursion limit or fills memory.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterator
from typing import Final, Literal

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError

from .._text import shorten
from ._errors import Problem, field_path
from ._lines import DataPath, Key, LineMap

#: Most values made by aliases in one file (an alias bomb expands exponentially).
MAX_NODES = 1_000_000
#: Deepest nesting of mappings and lists accepted.
MAX_DEPTH = 64
_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: ~6x faster
_OPEN = (
    yaml.BlockMappingStartToken,
    yaml.BlockSequenceStartToken,
    yaml.FlowMappingStartToken,
    yaml.FlowSequenceStartToken,
)
_CLOSE = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)
_ENDS = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
_STR = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_PLAIN_CACHE = 20_000  # distinct plain scalars remembered (and shared) per file


class _Core12Loader(_BASE_LOADER):  # type: ignore[misc,valid-type]
    """YAML 1.2 core schema, as AgentV's JS `yaml` package reads files: only true/false are
    booleans (`yes`, `no`, `on`, `off` stay strings), no timestamps (`2025-01-01` is a string),
    no sexagesimal or leading-zero octal numbers. Merge keys (`<<: *base`) still work."""

    yaml_implicit_resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}


_CORE12 = [
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
    (_MERGE_TAG, r"^(?:<<)$", "<"),
]
for _tag, _pattern, _first in _CORE12:
    _Core12Loader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


class _Core12Constructor(yaml.SafeLoader):
    """Builds scalar values with YAML 1.2 rules (`010` is ten, `0o10` is eight)."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = str(self.construct_scalar(node))
        digits = text.lstrip("+-")
        return int(text, 0) if digits[:2] in ("0o", "0x") else int(text, 10)


_Core12Constructor.add_constructor("tag:yaml.org,2002:int", _Core12Constructor.construct_yaml_int)

Rename = Callable[[DataPath, Key], Key]
"""`rename(path, key)`: the name a mapping key at `path` is stored under."""


def same_key(path: DataPath, key: Key) -> Key:
    return key


def _is_merge(event: yaml.ScalarEvent) -> bool:
    """A merge key: a plain `<<` (or one tagged `!!merge`)."""
    return bool(event.tag == _MERGE_TAG or (event.tag is None and event.implicit[0] and event.value == "<<"))


#: A key that is a mapping or list: what an unquoted `{{ name }}` value is to YAML.
_COLLECTION_KEY = (
    'a mapping or list as a key: a value written {{ name }} must be quoted ("{{ name }}") to be a template'
)
_UNQUOTED_TEMPLATE = re.compile(r"(?:^|:\s|-\s)\s*\{\{")
_COLON_IN_VALUE = re.compile(r"^\s*(?:-\s+)?[^\s:\"'#][^:]*:\s+[^\"'\s].*?:\s")


class YamlFailure(Exception):
    """The file cannot be read as YAML; `problem` says where and why. `syntax`: it failed as a
    whole (value problems found before it are dropped, as when composing the file failed)."""

    def __init__(self, problem: Problem, syntax: bool):
        super().__init__(str(problem))
        self.problem = problem
        self.syntax = syntax


class _Mark(enum.Enum):
    """Markers that are never values."""

    MERGE = "merge"  # what `YamlReader.entries` yields for a merge key `<<`
    KEY = "key"  # a mapping frame waits for a key
    PUSHED = "pushed"  # a collection was opened: its value comes when its frame closes
    MISSING = "missing"


MERGE: Final = _Mark.MERGE
_KEY: Final = _Mark.KEY
_PUSHED: Final = _Mark.PUSHED
_MISSING: Final = _Mark.MISSING
_NORMAL, _MERGED, _MERGE_LIST = 0, 1, 2


class _Frame:
    """A mapping or sequence being built. `kind`: a normal one; a mapping merged into the
    mapping at `path` (built at that path, no duplicate-key check, closes to (dict, its lines));
    or the list of such mappings given to `<<: [...]`."""

    __slots__ = ("path", "lines", "start", "anchor", "records", "pops_replay", "kind", "value", "key", "merges")

    def __init__(
        self,
        path: DataPath,
        lines: LineMap,
        start: yaml.Mark,
        anchor: str | None,
        records: bool,
        pops_replay: bool,
        kind: int,
        is_map: bool,
    ):
        self.path = path
        self.lines = lines
        self.start = start  # the start mark (for a merge list: the mapping it merges into)
        self.anchor = anchor
        self.records = records  # its anchor's events are being recorded
        self.pops_replay = pops_replay  # it is an alias being built again
        self.kind = kind
        self.value: dict[Key, object] | list[object] = {} if is_map else []
        self.key: Key | Literal[_Mark.KEY, _Mark.MERGE] | None = _KEY if is_map else None
        self.merges: list[tuple[dict[Key, object], LineMap]] | None = None


def _line(text: str, number: int) -> str:
    """Line `number` (from 0) of `text`, or '' past its end."""
    lines = text.split("\n", number + 1)
    return lines[number] if number < len(lines) else ""


class YamlReader:
    """Reads one YAML text as values, node by node, recording lines in the given LineMaps.

    `problems` collects what is wrong with single values (duplicate keys, recursive aliases,
    invalid scalars); a file that cannot be read at all raises YamlFailure.

    Example:
        reader = YamlReader(text, "suite.yaml")
        if reader.begin() is not None:
            value = reader.value((), LineMap("suite.yaml"))
            reader.end()
    """

    def __init__(self, text: str, file: str, rename: Rename = same_key):
        self.file = file
        self.rename = rename
        self.problems: list[Problem] = []
        self._text = text
        self._parser = _Core12Loader(text)
        self._constructor = _Core12Constructor("")
        self._stack: list[_Frame] = []
        self._replays: list[Iterator[yaml.Event]] = []  # aliases being built again, innermost last
        self._anchors: dict[str, list[yaml.Event]] = {}  # complete anchors: their node's events
        self._open: dict[str, int] = {}  # anchors of the document still open: start in _log
        self._log: list[yaml.Event] = []  # events read while an anchor is open
        self._building: dict[str, yaml.Mark] = {}  # anchored nodes being built: start mark (recursion)
        self._made = 0  # values made by aliases
        self._plain: dict[str, object] = {}

    def close(self) -> None:
        self._parser.dispose()

    def failure_problems(self, failure: YamlFailure) -> list[Problem]:
        """The problems to report when reading failed with `failure`."""
        return [failure.problem] if failure.syntax else [*self.problems, failure.problem]

    # -- the document ---------------------------------------------------------------------
    def begin(self) -> str | None:
        """Start the document: the kind of its root node (`mapping`, `sequence`, `scalar`), or
        None when the text holds no document."""
        self._parse()  # stream start
        if isinstance(self._parse(), yaml.StreamEndEvent):
            return None
        return self.next_kind()

    def next_kind(self) -> str:
        """What the next node is (an alias: what its anchor is), without reading it."""
        event = self._peek()
        if isinstance(event, yaml.AliasEvent):
            recorded = self._anchors.get(event.anchor)
            event = recorded[0] if recorded else event
        if isinstance(event, yaml.MappingStartEvent):
            return "mapping"
        if isinstance(event, yaml.SequenceStartEvent):
            return "sequence"
        return "scalar"

    def end(self) -> None:
        """Finish the document; a second document is an error, as when composing."""
        self._parse()  # document end
        event = self._parse()
        if not isinstance(event, yaml.StreamEndEvent):
            raise self._syntax_error(
                ComposerError(
                    "expected a single document in the stream", None, "but found another document", event.start_mark
                )
            )

    def value(self, path: DataPath, lines: LineMap) -> object:
        """Build the next node as the value at `path`."""
        event, replay = self._read()
        base = len(self._stack)
        value = self._child(event, replay, path, lines, True)
        return self._complete(base) if value is _PUSHED else value

    def entries(self, lines: LineMap) -> Iterator[Key | Literal[_Mark.MERGE]]:
        """The keys of the root mapping, in order (a merge key `<<` as MERGE); read each key's
        value with `value` or `items` before asking for the next key."""
        event, replay = self._read()
        self._open_frame(event, replay, (), lines, True, False, _NORMAL)
        frame = self._stack[-1]
        while True:
            event, replay = self._read()
            if isinstance(event, yaml.MappingEndEvent):
                self._close(frame)
                return
            self._key(frame, event, replay)
            key = frame.key
            assert key is not None and key is not _KEY and isinstance(frame.value, dict)
            yield key
            if key is not MERGE:
                frame.value[key] = None  # seen (for duplicate keys); the caller keeps the value
            frame.key = _KEY

    def items(
        self, path: DataPath, lines: LineMap, item_lines: Callable[[], LineMap]
    ) -> Iterator[tuple[int, object, LineMap]]:
        """The items of the sequence that comes next (`next_kind` said so), one at a time, each
        with its lines in a new map from `item_lines()`: (index, value, lines)."""
        event, replay = self._read()
        pops = False
        if isinstance(event, yaml.AliasEvent):
            self._replays.append(iter(self._recorded(event) or []))
            event, replay = self._read()
            pops = True
        self._open_frame(event, replay, path, lines, True, pops, _NORMAL)
        frame = self._stack[-1]
        index = 0
        while True:
            event, replay = self._read()
            if isinstance(event, yaml.SequenceEndEvent):
                self._close(frame)
                return
            here = item_lines()
            base = len(self._stack)
            value = self._child(event, replay, (*path, index), here, True)
            if value is _PUSHED:
                value = self._complete(base)
            yield index, value, here
            index += 1

    # -- events -----------------------------------------------------------------------------
    def _parse(self) -> yaml.Event:
        try:
            return self._parser.get_event()
        except yaml.YAMLError as exc:
            raise self._parse_error(exc) from None

    def _peek(self) -> yaml.Event:
        try:
            return self._parser.peek_event()
        except yaml.YAMLError as exc:
            raise self._parse_error(exc) from None

    def _parse_error(self, exc: yaml.YAMLError) -> YamlFailure:
        if isinstance(exc, yaml.MarkedYAMLError):
            return self._too_deep(exc) or self._syntax_error(exc)
        if isinstance(exc, yaml.reader.ReaderError) and isinstance(exc.character, int):
            line = self._text.count("\n", 0, exc.position) + 1
            what = f"character {exc.character:#06x}: {exc.reason} (write it as an escape in a double-quoted string)"
            return YamlFailure(Problem(self.file, line, "(yaml)", f"YAML error: {what}"), syntax=True)
        return YamlFailure(Problem(self.file, 1, "(yaml)", f"YAML error: {exc}"), syntax=True)

    def _read(self) -> tuple[yaml.Event, bool]:
        """The next event, and whether it comes from an alias being built again."""
        if self._replays:
            return next(self._replays[-1]), True
        event = self._parse()
        if self._open:
            self._log.append(event)
        return event, False

    def _syntax_error(self, exc: yaml.MarkedYAMLError) -> YamlFailure:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        what = " ".join(x for x in (exc.context, exc.problem) if x)
        text = _line(self._text, mark.line) if mark else ""
        if "\t" in text:
            what += " (a tab on that line: YAML indents with spaces only)"
        elif _UNQUOTED_TEMPLATE.search(text):
            what += ' (a value that starts with `{{` must be quoted: "{{ output }} ...")'
        elif "mapping values are not allowed" in what and _COLON_IN_VALUE.search(text):
            what += ' (a value holding ": " must be quoted: key: "Note: ...")'
        return YamlFailure(Problem(self.file, line, "(yaml)", f"YAML syntax error: {what}"), syntax=True)

    def _too_deep(self, exc: yaml.MarkedYAMLError) -> YamlFailure | None:
        """libyaml's own nesting limit (its scanner looks ahead in flow collections, past ours):
        the line where nesting passes MAX_DEPTH, found by the (iterative) Python scanner."""
        if "maximum nesting depth" not in str(exc.problem):
            return None
        depth = 0
        try:
            for token in yaml.scan(self._text, Loader=yaml.SafeLoader):
                if isinstance(token, _OPEN):
                    depth += 1
                    if depth > MAX_DEPTH:
                        where = Problem(
                            self.file, token.start_mark.line + 1, "(yaml)", f"nested deeper than {MAX_DEPTH} levels"
                        )
                        return YamlFailure(where, syntax=True)
                elif isinstance(token, _CLOSE):
                    depth -= 1
        except yaml.YAMLError:
            pass
        return None

    def _build_error(self, exc: yaml.YAMLError) -> YamlFailure:
        mark = getattr(exc, "problem_mark", None)
        return YamlFailure(
            Problem(self.file, mark.line + 1 if mark else 1, "(yaml)", f"YAML error: {exc}"), syntax=False
        )

    # -- nodes ------------------------------------------------------------------------------
    def _complete(self, base: int) -> object:
        """Read events until the frames above `base` are closed; the value of the last one."""
        stack = self._stack
        get_event = self._parser.get_event
        while True:
            frame = stack[-1]
            if self._replays:
                event, replay = next(self._replays[-1]), True
            else:
                try:
                    event = get_event()
                except yaml.YAMLError as exc:
                    raise self._parse_error(exc) from None
                replay = False
                if self._open:
                    self._log.append(event)
            if isinstance(event, _ENDS):
                value = self._close(frame)
                if len(stack) == base:
                    return value
                self._put(stack[-1], value)
                continue
            if frame.key is _KEY:
                self._key(frame, event, replay)
                continue
            if frame.key is MERGE or frame.kind == _MERGE_LIST:
                value = self._merge_source(frame, event, replay)
            elif frame.key is None:  # a sequence item
                value = self._child(event, replay, (*frame.path, len(frame.value)), frame.lines, True)
            else:  # a mapping value: the key's line is the value's
                value = self._child(event, replay, (*frame.path, frame.key), frame.lines, False)
            if value is not _PUSHED:
                self._put(frame, value)

    def _child(self, event: yaml.Event, replay: bool, path: DataPath, lines: LineMap, line: bool) -> object:
        """Start the node whose first event is `event`: a scalar's value, or _PUSHED."""
        if type(event) is yaml.ScalarEvent and event.anchor is None and not replay:
            if line:
                lines.add(path, self.file, event.start_mark.line + 1)
            found = self._plain.get(event.value, _MISSING) if event.tag is None and event.implicit[0] else _MISSING
            return self._scalar(event, path) if found is _MISSING else found
        if isinstance(event, yaml.AliasEvent):
            recorded = self._recorded(event)
            if recorded is None:
                start = self._building[event.anchor]
                if line:
                    lines.add(path, self.file, start.line + 1)
                self.problems.append(Problem(self.file, start.line + 1, field_path(path), "recursive YAML alias"))
                return None
            first = recorded[0]
            if isinstance(first, yaml.ScalarEvent):
                self._count()
                if line:
                    lines.add(path, self.file, first.start_mark.line + 1)
                return self._scalar(first, path)
            self._replays.append(iter(recorded))
            event, _ = self._read()
            self._open_frame(event, True, path, lines, line, True, _NORMAL)
            return _PUSHED
        if isinstance(event, yaml.ScalarEvent):
            if replay:
                self._count()
            self._scalar_anchor(event, replay)
            if line:
                lines.add(path, self.file, event.start_mark.line + 1)
            return self._scalar(event, path)
        self._open_frame(event, replay, path, lines, line, False, _NORMAL)
        return _PUSHED

    def _open_frame(
        self,
        event: yaml.NodeEvent,
        replay: bool,
        path: DataPath,
        lines: LineMap,
        line: bool,
        pops_replay: bool,
        kind: int,
    ) -> None:
        if len(self._stack) >= MAX_DEPTH:
            where = Problem(self.file, event.start_mark.line + 1, "(yaml)", f"nested deeper than {MAX_DEPTH} levels")
            raise YamlFailure(where, syntax=True)
        if replay:
            self._count()
        if line:
            lines.add(path, self.file, event.start_mark.line + 1)
        anchor = event.anchor
        records = False
        if anchor is not None:
            if not replay:
                self._new_anchor(anchor, event.start_mark)
                if not self._open:
                    self._log.append(event)
                self._open[anchor] = len(self._log) - 1
                records = True
            self._building[anchor] = event.start_mark
        is_map = isinstance(event, yaml.MappingStartEvent)
        self._stack.append(_Frame(path, lines, event.start_mark, anchor, records, pops_replay, kind, is_map))

    def _close(self, frame: _Frame) -> object:
        self._stack.pop()
        if frame.anchor is not None:
            self._building.pop(frame.anchor, None)
            if frame.records:
                self._anchors[frame.anchor] = self._log[self._open.pop(frame.anchor) :]
                if not self._open:
                    self._log.clear()
        if frame.pops_replay:
            self._replays.pop()
        value = frame.value
        if frame.merges:
            value = self._merged(frame)
        if frame.kind == _MERGED:
            return (value, frame.lines)
        return value

    def _put(self, frame: _Frame, value: object) -> None:
        key = frame.key
        if isinstance(frame.value, list):  # a sequence (or the list of mappings given to `<<`)
            frame.value.append(value)
            return
        if key is MERGE:
            if frame.merges is None:
                frame.merges = []
            if isinstance(value, list):  # `<<: [*a, *b]`: the first listed wins
                frame.merges.extend(_merged_source(v) for v in reversed(value) if v is not None)
            elif value is not None:
                frame.merges.append(_merged_source(value))
        elif key is not None and key is not _KEY:
            frame.value[key] = value
        frame.key = _KEY

    def _key(self, frame: _Frame, event: yaml.Event, replay: bool) -> None:
        """Read a mapping key: duplicates are problems, its line is recorded, `frame.key` set."""
        line = event.start_mark.line + 1
        key: object = _MISSING
        if type(event) is yaml.ScalarEvent and event.tag is None and event.anchor is None and event.implicit[0]:
            key = self._plain.get(event.value, _MISSING)  # the common case: a plain key seen before
        if key is not _MISSING:
            pass
        elif isinstance(event, yaml.AliasEvent):
            recorded = self._recorded(event)
            if recorded is None:
                key = None
            elif isinstance(recorded[0], yaml.ScalarEvent):
                first = recorded[0]
                line = first.start_mark.line + 1
                if _is_merge(first):
                    frame.key = MERGE
                    return
                key = self._key_value(first)
            else:
                self._replays.append(iter(recorded))
                event, replay = self._read()
                line = event.start_mark.line + 1
                key = self._scratch(event, replay, True)
        elif isinstance(event, yaml.ScalarEvent):
            self._scalar_anchor(event, replay)
            if _is_merge(event):
                frame.key = MERGE
                return
            key = self._key_value(event)
        else:
            key = self._scratch(event, replay, False)
            self.problems.append(Problem(self.file, line, field_path(frame.path), _COLLECTION_KEY))
        name = self.rename(frame.path, key if isinstance(key, (str, int, float, bool)) else str(key))
        key_path = (*frame.path, name)
        if frame.kind == _NORMAL and name in frame.value:  # merged keys may repeat (the last wins)
            self.problems.append(Problem(self.file, line, field_path(key_path), f"duplicate key {name!r}"))
            frame.lines.forget(key_path)
        frame.lines.add(key_path, self.file, line)
        frame.key = name

    def _key_value(self, event: yaml.ScalarEvent) -> object:
        try:
            return self._construct(event)
        except ValueError:
            return event.value

    def _scratch(self, event: yaml.NodeEvent, replay: bool, pops_replay: bool) -> object:
        """A mapping or list used as a key: its value (it becomes text), nothing recorded."""
        before = len(self.problems)
        base = len(self._stack)
        self._open_frame(event, replay, (), LineMap(self.file), False, pops_replay, _NORMAL)
        value = self._complete(base)
        del self.problems[before:]
        return value

    def _merge_source(self, frame: _Frame, event: yaml.Event, replay: bool) -> object:
        """What is merged into a mapping: the value of its `<<` (`frame` is the mapping), or an
        item of the list given to `<<` (`frame` is that list, at the mapping's path and with
        its start mark). Opens the merged mapping (or the list) and returns _PUSHED."""
        in_list = frame.kind == _MERGE_LIST
        node = event
        if isinstance(event, yaml.AliasEvent):
            recorded = self._recorded(event)
            if recorded is None:
                start = self._building[event.anchor]
                self.problems.append(Problem(self.file, start.line + 1, field_path(frame.path), "recursive YAML alias"))
                return None
            node = recorded[0]
        mapping = isinstance(node, yaml.MappingStartEvent)
        if mapping or (not in_list and isinstance(node, yaml.SequenceStartEvent)):
            pops = node is not event
            if pops:
                self._replays.append(iter(self._recorded(event) or []))
                event, replay = self._read()
            self._open_frame(
                event, replay, frame.path, LineMap(self.file), False, pops, _MERGED if mapping else _MERGE_LIST
            )
            if not mapping:
                self._stack[-1].start = frame.start  # its items' errors name the mapping
            return _PUSHED
        found = "scalar" if isinstance(node, yaml.ScalarEvent) else "sequence"
        wanted = "a mapping" if in_list else "a mapping or list of mappings"
        error = ConstructorError(
            "while constructing a mapping",
            frame.start,
            f"expected {wanted} for merging, but found {found}",
            node.start_mark,
        )
        raise self._build_error(error)

    def _merged(self, frame: _Frame) -> dict[Key, object]:
        """The mapping with its merged mappings under its own keys (YAML merge rules); the
        lines of each merged key are those of the mapping it came from."""
        assert isinstance(frame.value, dict)
        merged: dict[Key, object] = {}
        source: dict[Key, int] = {}
        for i, (values, _) in enumerate(frame.merges or []):
            for key, value in values.items():
                merged[key] = value
                source[key] = i
        for key, value in frame.value.items():
            merged[key] = value
            source.pop(key, None)
        for i, (_, lines) in enumerate(frame.merges or []):
            keys = {key for key, came in source.items() if came == i}
            if keys:
                frame.lines.copy_under(lines, frame.path, keys)
        return merged

    # -- anchors and aliases ----------------------------------------------------------------
    def _new_anchor(self, name: str, mark: yaml.Mark) -> None:
        first = None
        if name in self._anchors:
            first = self._anchors[name][0].start_mark
        elif name in self._open:
            first = self._log[self._open[name]].start_mark
        if first is not None:
            raise self._syntax_error(
                ComposerError("found duplicate anchor; first occurrence", first, "second occurrence", mark)
            )

    def _scalar_anchor(self, event: yaml.ScalarEvent, replay: bool) -> None:
        if event.anchor is not None and not replay:
            self._new_anchor(event.anchor, event.start_mark)
            self._anchors[event.anchor] = [event]

    def _recorded(self, event: yaml.AliasEvent) -> list[yaml.Event] | None:
        """The events of the node an alias names; None when that node is being built (a
        recursive alias)."""
        if event.anchor in self._building:
            return None
        recorded = self._anchors.get(event.anchor)
        if recorded is None:
            raise self._syntax_error(ComposerError(None, None, "found undefined alias", event.start_mark))
        return recorded

    def _count(self) -> None:
        self._made += 1
        if self._made > MAX_NODES:
            message = f"YAML error: more than {MAX_NODES} values (an alias bomb?)"
            raise YamlFailure(Problem(self.file, 1, "(yaml)", message), syntax=False)

    # -- scalars ----------------------------------------------------------------------------
    def _scalar(self, event: yaml.ScalarEvent, path: DataPath) -> object:
        try:
            value = self._construct(event)
        except ValueError as exc:  # e.g. `when: !!timestamp 2024-13-45`
            message = (
                f"invalid value {shorten(event.value, 60)!r}: {shorten(str(exc), 120)} (quote it to keep it as text)"
            )
            self.problems.append(Problem(self.file, event.start_mark.line + 1, field_path(path), message))
            return None
        if type(value) is str and "\0" in value:  # only a quoted "\0" escape makes one
            message = (
                "holds a NUL character (\\0), refused in eval files (no file name or command argument can hold one)"
            )
            self.problems.append(Problem(self.file, event.start_mark.line + 1, field_path(path), message))
            return value.replace("\0", "\ufffd")  # still text: the field reports no second problem
        return value

    def _construct(self, event: yaml.ScalarEvent) -> object:
        tag = event.tag
        text = event.value
        if tag is None:
            if not event.implicit[0]:
                return text  # quoted or block: a string
            found = self._plain.get(text, _MISSING)
            if found is not _MISSING:
                return found
            tag = self._parser.resolve(yaml.ScalarNode, text, event.implicit)
            found = text if tag == _STR else self._construct_node(tag, event)
            if len(self._plain) >= _PLAIN_CACHE:
                self._plain.clear()
            self._plain[text] = found  # equal plain scalars share one value
            return found
        if tag == "!":
            tag = self._parser.resolve(yaml.ScalarNode, text, event.implicit)
        return self._construct_node(tag, event)

    def _construct_node(self, tag: str, event: yaml.ScalarEvent) -> object:
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        try:
            return self._constructor.construct_object(node, deep=True)
        except ValueError:
            raise
        except yaml.YAMLError as exc:  # an unknown tag, or the merge tag as a value
            raise self._build_error(exc) from None
        except Exception:  # e.g. `!!bool maybe` (a KeyError in PyYAML)
            raise ValueError(f"not a valid {tag.removeprefix('tag:yaml.org,2002:')}") from None
        finally:
            self._constructor.constructed_objects.clear()


def _merged_source(value: object) -> tuple[dict[Key, object], LineMap]:
    """A merged mapping as its frame closed: (its values, its lines)."""
    assert isinstance(value, tuple)
    return value
