"""Copy-on-write views of a JSON document, so a trial's backend costs what its tools touch.

`cow(document)` is a dict (or list) that reads like `document` and can be changed in place by
tool functions, while `document` itself is never changed: each dict or list is copied
(shallowly) the first time it is reached through the view, and only then. A tool that reads
three reservations of tau-bench's 3 MB airline database copies those three, not the database.

`fork(view)` gives a second, independent view of a view's current contents in O(1): from then
on neither changes what the other sees (a cheap snapshot to roll a failed tool call back to).
`same_document(a, b)` compares two documents as their JSON texts compare, skipping the parts
both views still share with the original.

Each container records the view (`owner`) it was copied for; a container reached through a
parent owned by another view is copied again for that parent. A fork gives both sides new
owners, which freezes everything the two shared.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Iterator, Mapping
from typing import SupportsIndex, overload


class _Owner:
    """The identity of one view (compared with `is`)."""

    __slots__ = ()


def _own(value: object, owner: _Owner) -> object:
    """`value` as a container `owner` may change: itself if already owned, else a copy."""
    kind = type(value)
    if kind is not dict and kind is not list and kind is not CowDict and kind is not CowList:
        return value  # a scalar, or a container of another kind: kept as it is
    if isinstance(value, CowDict):
        return value if value.owner is owner else CowDict(value, owner)
    if isinstance(value, CowList):
        return value if value.owner is owner else CowList(value, owner)
    if isinstance(value, dict):
        return CowDict(value, owner)
    return CowList(value, owner) if isinstance(value, list) else value


class CowDict(dict[Hashable, object]):
    """A dict whose nested containers are copied for this view when first reached."""

    __slots__ = ("owner",)

    def __init__(
        self, data: Mapping[Hashable, object] | Iterable[tuple[Hashable, object]] = (), owner: _Owner | None = None
    ) -> None:
        super().__init__(dict.items(data) if isinstance(data, dict) else data)  # the stored values, as they are
        self.owner = owner or _Owner()

    def __iter__(self) -> Iterator[Hashable]:  # defined, so `dict(view)` and `{**view}` read through __getitem__
        return dict.__iter__(self)

    def _take(self, key: Hashable, value: object) -> object:
        owned = _own(value, self.owner)
        if owned is not value:
            dict.__setitem__(self, key, owned)
        return owned

    def __getitem__(self, key: Hashable) -> object:
        return self._take(key, dict.__getitem__(self, key))

    def get(self, key: Hashable, default: object = None) -> object:
        return self[key] if dict.__contains__(self, key) else default

    def setdefault(self, key: Hashable, default: object = None) -> object:
        if not dict.__contains__(self, key):
            dict.__setitem__(self, key, default)
        return self[key]

    def pop(self, key: Hashable, *default: object) -> object:
        if dict.__contains__(self, key):
            value = self[key]
            dict.__delitem__(self, key)
            return value
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[Hashable, object]:
        key = next(reversed(self))
        return key, self.pop(key)

    def values(self) -> list[object]:  # type: ignore[override]
        return [self[key] for key in self]

    def items(self) -> list[tuple[Hashable, object]]:  # type: ignore[override]
        return [(key, self[key]) for key in self]

    def copy(self) -> CowDict:
        """A shallow copy: the containers it shares with this view are frozen for both."""
        return fork(self)

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[object, ...]:  # copy/deepcopy/pickle as a plain dict
        return (dict, (), None, None, iter(self.items()))


class CowList(list[object]):
    """A list whose nested containers are copied for this view when first reached."""

    __slots__ = ("owner",)

    def __init__(self, data: Iterable[object] = (), owner: _Owner | None = None) -> None:
        super().__init__(list.__iter__(data) if isinstance(data, list) else data)  # the stored items, as they are
        self.owner = owner or _Owner()

    @overload
    def __getitem__(self, index: SupportsIndex) -> object: ...
    @overload
    def __getitem__(self, index: slice) -> list[object]: ...
    def __getitem__(self, index: SupportsIndex | slice) -> object:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        value = list.__getitem__(self, index)
        owned = _own(value, self.owner)
        if owned is not value:
            list.__setitem__(self, index, owned)
        return owned

    def __iter__(self) -> Iterator[object]:
        for i in range(len(self)):
            yield self[i]

    def __reversed__(self) -> Iterator[object]:
        for i in range(len(self) - 1, -1, -1):
            yield self[i]

    def pop(self, index: SupportsIndex = -1) -> object:
        value = self[index]
        list.__delitem__(self, index)
        return value

    def copy(self) -> CowList:
        return fork(self)

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[object, ...]:
        return (list, (), None, iter(self))


def cow(document: object) -> object:
    """A copy-on-write view of `document` (a scalar is returned as it is)."""
    return _own(document, _Owner())


@overload
def fork(view: CowDict) -> CowDict: ...
@overload
def fork(view: CowList) -> CowList: ...
@overload
def fork(view: object) -> object: ...
def fork(view: object) -> object:
    """An independent view of `view`'s current contents; `view` stays usable and neither
    changes the other from now on."""
    if type(view) is CowDict:
        view.owner = _Owner()  # what `view` owned so far is shared now: both copy it before a change
        return CowDict(view, _Owner())
    if type(view) is CowList:
        view.owner = _Owner()
        return CowList(view, _Owner())
    return cow(view)


def same_document(a: object, b: object) -> bool:
    """Whether `a` and `b` are the same JSON document (as their JSON texts with sorted keys
    would be); parts the two share are not walked."""
    if a is b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        if dict.__len__(a) != dict.__len__(b):
            return False
        return all(
            dict.__contains__(b, key) and same_document(dict.__getitem__(a, key), dict.__getitem__(b, key))
            for key in dict.__iter__(a)
        )
    if isinstance(a, list) and isinstance(b, list):
        return list.__len__(a) == list.__len__(b) and all(
            same_document(x, y) for x, y in zip(list.__iter__(a), list.__iter__(b), strict=True)
        )
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return False
    return json.dumps(a, default=str) == json.dumps(b, default=str)
