"""What the time bound on user-written regular expressions costs on ordinary patterns.

    python benchmarks/regex_bound.py [--number 20000] [--repeat 7]

For a typical `capture` regex on a reply and a typical `tool-called` `args_match: regex` on an
argument, the time of one search as convoeval did it before (`re.search(pattern, text)`, which
uses `re`'s own cache of compiled patterns) and as it does now (`_regex.search`: the pattern
compiled once with the `regex` module, searched with a time bound), and the whole
`capture_value` / `args_match` call as the run makes it. Prints microseconds per call (the
best of `--repeat` runs of `--number` calls). Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import re
import timeit

from convoeval import _regex
from convoeval.graders._tools import args_match
from convoeval.run._controls import capture_value
from convoeval.spec import Capture
from convoeval.targets import ChatReply

SHORT_REPLY = "Created order ORD-42 for 1 book; it ships tomorrow. Anything else?"
LONG_REPLY = ("Here is a summary of what I did and why. " * 100) + "Your order is ORD-42."  # ~4 KB
CASES = [
    ("capture, 67-char reply", r"order (ORD-\d+)", SHORT_REPLY),
    ("capture, 4 KB reply", r"order (ORD-\d+)", LONG_REPLY),
    ("tool-called args, hit", r"^par", "paris hotels"),
    ("tool-called args, miss", r"\bberlin\b", "paris hotels near the station"),
]


def best_us(statement: object, number: int, repeat: int) -> float:
    return min(timeit.repeat(statement, number=number, repeat=repeat)) / number * 1e6  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    n, r = args.number, args.repeat
    print(f"{'case':28} {'re.search':>10} {'bounded':>10} {'ratio':>6}   (us per search, best of {r} x {n})")
    for name, pattern, text in CASES:
        before = best_us(lambda p=pattern, t=text: re.search(p, t), n, r)
        after = best_us(lambda p=pattern, t=text: _regex.search(p, t, field="bench"), n, r)
        print(f"{name:28} {before:10.2f} {after:10.2f} {after / before:6.2f}")
    rule = Capture.model_validate({"name": "order", "regex": r"order (ORD-\d+)"})
    reply = ChatReply(text=SHORT_REPLY)
    print(f"capture_value (67-char reply): {best_us(lambda: capture_value(rule, reply), n, r):.2f} us")
    expected, actual = {"q": "^par", "city": "(?i)paris"}, {"q": "paris hotels", "city": "Paris"}
    print(f"args_match regex, 2 args:      {best_us(lambda: args_match(expected, actual, 'regex'), n, r):.2f} us")


if __name__ == "__main__":
    main()
