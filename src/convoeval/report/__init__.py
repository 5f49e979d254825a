"""Reports: the terminal summary and result files."""

from ._files import ResultWriter, read_results
from ._summary import print_summary, turn_table

__all__ = ["ResultWriter", "print_summary", "read_results", "turn_table"]
