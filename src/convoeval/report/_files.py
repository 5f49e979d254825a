"""The report layer's results file formats: HTML, JUnit XML and Markdown (added to
`RESULT_FORMATS` when the report package loads); writing and reading results files is
`convoeval._result_files` (re-exported here)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO

from .._result_files import (
    RESULT_FORMATS,
    ResultWriter,
    add_result_format,
    check_output,
    check_output_suffix,
    export_results,
    output_problem,
    read_results,
)
from ..results import EvaluationResult

__all__ = [
    "RESULT_FORMATS",
    "ResultWriter",
    "check_output",
    "check_output_suffix",
    "export_results",
    "output_problem",
    "read_results",
]


def _parsed(results_json: Iterable[str]) -> list[EvaluationResult]:
    return [EvaluationResult.model_validate_json(data) for data in results_json]


# The report writers load when a results file asks for them (tests/test_layers.py, LAZY).
def _write_html(out: IO[str], results_json: Iterable[str]) -> None:
    from ._html import render_report

    out.write(render_report(_parsed(results_json)))


def _write_junit(out: IO[str], results_json: Iterable[str]) -> None:
    from ._junit import junit_xml

    out.write(junit_xml(_parsed(results_json)))


def _write_markdown(out: IO[str], results_json: Iterable[str]) -> None:
    from ._markdown import markdown_summary

    out.write(markdown_summary(_parsed(results_json)))


add_result_format(".html", _write_html)
add_result_format(".xml", _write_junit)
add_result_format(".md", _write_markdown)
