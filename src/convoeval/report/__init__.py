"""Reports: the terminal summary, run progress, result files, and the reports people look at:
HTML, JUnit XML, Markdown, run comparison and human labels. What a run prints and writes as it
goes loads with the package; the other reports load when first used (`report.write_html`). The
local viewer is `convoeval.report.viewer` (imported on demand: it needs scipy)."""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes
from ._files import (
    RESULT_FORMATS,
    ResultWriter,
    check_output_suffix,
    export_results,
    output_problem,
    read_results,
)
from ._progress import RunProgress, meter_line, print_run_totals
from ._summary import print_panel_agreement, print_summary, turn_table

if TYPE_CHECKING:
    from ._compare import Comparison, PairedResult, compare_results
    from ._failures import failure_lines, headline
    from ._groups import NO_VALUE, field_value, group_results, groups_markdown, groups_table
    from ._html import read_battle_records, render_comparison, render_report, write_comparison, write_html
    from ._inspect_export import write_inspect_log
    from ._junit import junit_kind, junit_xml, write_junit
    from ._labels import SCALES, Label, LabelStore
    from ._markdown import markdown_comparison, markdown_summary, write_markdown
    from ._overview import Overview, overview
    from ._panel import PanelAgreement, agreement_figures, panel_agreement
    from ._plot import PLOT_FORMATS, plot_leaderboard
    from ._runs import LoadedRun, ReportInputError, RunInfo, list_runs, load_run

__getattr__ = lazy_attributes(
    __name__,
    {
        "._compare": ("Comparison", "PairedResult", "compare_results"),
        "._failures": ("failure_lines", "headline"),
        "._panel": ("PanelAgreement", "agreement_figures", "panel_agreement"),
        "._groups": ("NO_VALUE", "field_value", "group_results", "groups_markdown", "groups_table"),
        "._html": ("read_battle_records", "render_comparison", "render_report", "write_comparison", "write_html"),
        "._inspect_export": ("write_inspect_log",),
        "._junit": ("junit_kind", "junit_xml", "write_junit"),
        "._labels": ("SCALES", "Label", "LabelStore"),
        "._markdown": ("markdown_comparison", "markdown_summary", "write_markdown"),
        "._overview": ("Overview", "overview"),
        "._plot": ("PLOT_FORMATS", "plot_leaderboard"),
        "._runs": ("LoadedRun", "ReportInputError", "RunInfo", "list_runs", "load_run"),
    },
)

__all__ = [
    "PanelAgreement",
    "agreement_figures",
    "panel_agreement",
    "print_panel_agreement",
    "PLOT_FORMATS",
    "RESULT_FORMATS",
    "SCALES",
    "Comparison",
    "Label",
    "LabelStore",
    "LoadedRun",
    "Overview",
    "PairedResult",
    "ReportInputError",
    "ResultWriter",
    "RunInfo",
    "RunProgress",
    "check_output_suffix",
    "compare_results",
    "export_results",
    "NO_VALUE",
    "failure_lines",
    "write_inspect_log",
    "field_value",
    "group_results",
    "groups_markdown",
    "groups_table",
    "headline",
    "junit_kind",
    "junit_xml",
    "list_runs",
    "load_run",
    "markdown_comparison",
    "markdown_summary",
    "meter_line",
    "output_problem",
    "overview",
    "plot_leaderboard",
    "print_run_totals",
    "print_summary",
    "read_battle_records",
    "read_results",
    "render_comparison",
    "render_report",
    "turn_table",
    "write_comparison",
    "write_html",
    "write_junit",
    "write_markdown",
]
