"""JUnit XML for CI servers: one testcase per test and target, failures and errors apart.

The layout follows the Apache Ant JUnit schema (the one CI servers read; the test suite
validates against it): `<testsuites>` holds one `<testsuite>` per eval suite with
`properties`, its `testcase`s, then `system-out` and `system-err`. A test that did not reach its
threshold is a `<failure>`; an execution error, or a result no grader could decide, is an
`<error>`; only a test whose verdict is `skip` (skipped, or not started for a budget) is
`<skipped/>`. The verdict decides: a test a budget ended (`budget_exhausted`) with verdict `fail`
is a `<failure>` of type `budget_exhausted`, never a skip.
"""

from __future__ import annotations

import re
import socket
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path

from ..results import EvaluationResult
from ._failures import failure_lines, headline
from ._overview import suite_name

#: Characters XML 1.0 cannot hold (model output may contain them).
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def junit_kind(result: EvaluationResult) -> str | None:
    """`failure`, `error`, `skipped` or None (passed): how JUnit (and the pytest plugin) report it.

    It follows the verdict: only verdict `skip` is `skipped`, whatever the execution status (a
    conversation a budget ended is verdict `fail`, status `budget_exhausted`: a failure)."""
    if result.verdict == "skip":
        return "skipped"
    if result.execution_status == "execution_error" or result.verdict == "error":
        return "error"
    return None if result.verdict == "pass" else "failure"


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.3f}"


def junit_xml(results: Iterable[EvaluationResult], *, timestamp: str | None = None) -> str:
    """The results as a JUnit XML document (text).

    Args:
        timestamp: when the run started, `YYYY-MM-DDTHH:MM:SS` (default: now, UTC).
    """
    stamp = (timestamp or time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()))[:19]
    host = socket.gethostname() or "localhost"
    groups: dict[str, list[EvaluationResult]] = {}
    for result in results:
        groups.setdefault(suite_name(result), []).append(result)
    root = ET.Element("testsuites")
    for index, (name, members) in enumerate(groups.items()):
        suite = _clean(name)  # a suite's name, like every text of a result, may hold what XML cannot
        kinds = [junit_kind(r) for r in members]
        node = ET.SubElement(
            root,
            "testsuite",
            {
                "name": suite,
                "package": suite,
                "id": str(index),
                "timestamp": stamp,
                "hostname": host,
                "tests": str(len(members)),
                "failures": str(kinds.count("failure")),
                "errors": str(kinds.count("error")),
                "skipped": str(kinds.count("skipped")),
                "time": _seconds(sum(r.duration_ms for r in members)),
            },
        )
        properties = ET.SubElement(node, "properties")
        for target in dict.fromkeys(r.target for r in members):
            ET.SubElement(properties, "property", {"name": "target", "value": _clean(target)})
        notes: list[str] = []
        for result, kind in zip(members, kinds, strict=True):
            case = ET.SubElement(
                node,
                "testcase",
                {
                    "name": _clean(f"{result.test_id} [{result.target}]"),
                    "classname": suite,
                    "time": _seconds(result.duration_ms),
                },
            )
            if kind == "skipped":
                ET.SubElement(case, "skipped", {"message": _clean(headline(result))})
            elif kind is not None:
                status = (
                    "grader_error"
                    if kind == "error" and result.execution_status != "execution_error"
                    else result.execution_status
                )
                element = ET.SubElement(case, kind, {"message": _clean(headline(result)), "type": status})
                element.text = _clean("\n".join(failure_lines(result)))
            notes.extend(f"{result.test_id} [{result.target}]: {note}" for note in result.notes)
        ET.SubElement(node, "system-out").text = _clean("\n".join(notes))
        ET.SubElement(node, "system-err").text = ""
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(results: Iterable[EvaluationResult], path: str | Path, *, timestamp: str | None = None) -> Path:
    """Write `junit_xml(results)` to `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(junit_xml(results, timestamp=timestamp), encoding="utf-8")
    return path
