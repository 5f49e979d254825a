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
from collections.abc import Iterator
from typing import Any, SupportsIndex


class _Owner:
    """The identity of one view (compared with `is`)."""

    __slots__ = ()


def _own(value: Any, owner: _Owner) -> Any:
    """`value` as a container `owner` may change: itself if already owned, else a copy."""
    kind = type(value)
    if kind is CowDict or kind is CowList:
        return value if value.owner is owner else kind(value, owner)
    if kind is dict:
        return CowDict(value, owner)
    if kind is list:
        return CowList(value, owner)
    return value


class CowDict(dict[Any, Any]):
    """A dict whose nested containers are copied for this view when first reached."""

    __slots__ = ("owner",)

    def __init__(self, data: Any = (), owner: _Owner | None = None) -> None:
        super().__init__(dict.items(data) if isinstance(data, dict) else data)  # the stored values, as they are
        self.owner = owner or _Owner()

    def __iter__(self) -> Iterator[Any]:  # defined, so `dict(view)` and `{**view}` read through __getitem__
        return dict.__iter__(self)

    def _take(self, key: Any, value: Any) -> Any:
        owned = _own(value, self.owner)
        if owned is not value:
            dict.__setitem__(self, key, owned)
        return owned

    def __getitem__(self, key: Any) -> Any:
        return self._take(key, dict.__getitem__(self, key))

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if dict.__contains__(self, key) else default

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if not dict.__contains__(self, key):
            dict.__setitem__(self, key, default)
        return self[key]

    def pop(self, key: Any, *default: Any) -> Any:
        if dict.__contains__(self, key):
            value = self[key]
            dict.__delitem__(self, key)
            return value
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[Any, Any]:
        key = next(reversed(self))
        return key, self.pop(key)

    def values(self) -> list[Any]:  # type: ignore[override]
        return [self[key] for key in self]

    def items(self) -> list[tuple[Any, Any]]:  # type: ignore[override]
        return [(key, self[key]) for key in self]

    def copy(self) -> CowDict:
        """A shallow copy: the containers it shares with this view are frozen for both."""
        return fork(self)

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:  # copy/deepcopy/pickle as a plain dict
        return (dict, (), None, None, iter(self.items()))


class CowList(list[Any]):
    """A list whose nested containers are copied for this view when first reached."""

    __slots__ = ("owner",)

    def __init__(self, data: Any = (), owner: _Owner | None = None) -> None:
        super().__init__(list.__iter__(data) if isinstance(data, list) else data)  # the stored items, as they are
        self.owner = owner or _Owner()

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        value = list.__getitem__(self, index)
        owned = _own(value, self.owner)
        if owned is not value:
            list.__setitem__(self, index, owned)
        return owned

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]

    def __reversed__(self) -> Iterator[Any]:
        for i in range(len(self) - 1, -1, -1):
            yield self[i]

    def pop(self, index: SupportsIndex = -1) -> Any:
        value = self[index]
        list.__delitem__(self, index)
        return value

    def copy(self) -> CowList:
        return fork(self)

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        return (list, (), None, iter(self))


def cow(document: Any) -> Any:
    """A copy-on-write view of `document` (a scalar is returned as it is)."""
    return _own(document, _Owner())


def fork(view: Any) -> Any:
    """An independent view of `view`'s current contents; `view` stays usable and neither
    changes the other from now on."""
    kind = type(view)
    if kind is not CowDict and kind is not CowList:
        return cow(view)
    view.owner = _Owner()  # what `view` owned so far is shared now: both copy it before a change
    return kind(view, _Owner())


def same_document(a: Any, b: Any) -> bool:
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
