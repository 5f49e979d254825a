"""The results file (`run -o`) is never written through a link: a suite's `before_all` hook may
write the eval folder (where `-o` often points) before the results file is opened, or leave links
for the next run, and convoeval often runs as root. Real runs, real hooks in bubblewrap, real
files."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

import convoeval
from convoeval._result_files import export_results
from convoeval.errors import ConfigError
from convoeval.results import EvaluationResult

from .conftest import passing_result, read_jsonl, write

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def _results_in(path: Path) -> list[str]:
    if path.suffix == ".jsonl":
        return [r["test_id"] for r in read_jsonl(path)]
    return [EvaluationResult.model_validate(r).test_id for r in json.loads(path.read_text())]


@needs_bwrap
@pytest.mark.parametrize("store", [True, False], ids=["store", "no-store"])
@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_links_a_hook_plants_where_results_go_are_replaced_never_followed(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str, store: bool
) -> None:
    """Before: the hook's `ln -sf ~/.bashrc results.json.partial` (the fixed name the JSON was
    staged under) and `ln -sf FILE results.jsonl` (opened with "w" after the hook) made
    convoeval overwrite those files with results (and the test input `$(touch PWNED)` with them)."""
    monkeypatch.delenv("CONVOEVAL_SANDBOX", raising=False)
    victims = {name: write(tmp_path / "home" / name, f"{name} of the user\n") for name in ("bashrc", "profile")}
    hook = f"ln -sf {victims['bashrc']} results{suffix}; ln -sf {victims['profile']} results{suffix}.partial; true"
    suite = write(
        tmp_path / "suite" / "s.eval.yaml",
        "execution: {target: scripted}\n"
        f"workspace:\n  hooks:\n    before_all: {{command: {hook!r}}}\n"
        "tests:\n  - {id: t1, input: '$(touch PWNED)', assertions: [{type: contains, value: x}]}\n",
    )
    monkeypatch.chdir(suite.parent)
    for _ in range(2):  # the second run starts with the links the first one's hook made
        if store:
            code, out, err = cli("run", suite.name, "-o", f"results{suffix}", "--no-cache", "--store", tmp_path / "st")
            assert code in (0, 1), out + err
        else:  # no run store: only `convoeval.run` runs without one
            convoeval.run(suite.name, output=f"results{suffix}", cache=False, store=False)
    assert {name: p.read_text() for name, p in victims.items()} == {n: f"{n} of the user\n" for n in victims}
    results = suite.parent / f"results{suffix}"
    assert not results.is_symlink() and _results_in(results) == ["t1"]
    assert (suite.parent / f"results{suffix}.partial").is_symlink()  # the hook's, left as it made it
    left = [p.name for p in suite.parent.iterdir() if p.name.endswith(".partial") and not p.is_symlink()]
    assert not left


def _suite_swapping_out_for_a_link_to(folder: Path, tmp_path: Path) -> Path:
    """A suite beside a folder `out` that its `before_all` hook replaces with a link to `folder`."""
    hook = f"rm -rf out; ln -s {folder} out; true"
    suite = write(
        tmp_path / "suite" / "s.eval.yaml",
        "execution: {target: scripted}\n"
        f"workspace:\n  hooks:\n    before_all: {{command: {hook!r}}}\n"
        "tests:\n  - {id: t1, input: hi, assertions: [{type: contains, value: x}]}\n",
    )
    (suite.parent / "out").mkdir()
    return suite


@needs_bwrap
@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_a_folder_a_hook_swaps_for_a_link_is_refused(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    """`-o out/results.json` in the eval folder: the hook replaces `out` with a link to another
    folder. Before: the results went there, over any file of that name."""
    monkeypatch.delenv("CONVOEVAL_SANDBOX", raising=False)
    elsewhere = write(tmp_path / "elsewhere" / f"results{suffix}", "not yours to write\n")
    suite = _suite_swapping_out_for_a_link_to(elsewhere.parent, tmp_path)
    monkeypatch.chdir(suite.parent)
    code, out, err = cli("run", suite.name, "-o", f"out/results{suffix}", "--no-cache", "--store", tmp_path / "st")
    assert elsewhere.read_text() == "not yours to write\n"
    assert sorted(os.listdir(elsewhere.parent)) == [f"results{suffix}"]
    said = f"error: cannot write results to out/results{suffix}: out became a symbolic link, not followed"
    assert code == 2 and err.startswith(f"{said}; results committed so far are kept: convoeval run --resume "), err


@needs_bwrap
@pytest.mark.parametrize("option", ["--html", "--junit", "--markdown"])
def test_a_reports_folder_a_hook_swaps_for_a_link_is_refused(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    """`run --html out/r.html`: the hook replaces `out` with a link to a folder it cannot write
    itself. Before: convoeval, on the host, wrote the report there."""
    monkeypatch.delenv("CONVOEVAL_SANDBOX", raising=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    suite = _suite_swapping_out_for_a_link_to(elsewhere, tmp_path)
    monkeypatch.chdir(suite.parent)
    code, out, err = cli("run", suite.name, option, "out/r", "--no-cache", "--store", tmp_path / "st")
    assert os.listdir(elsewhere) == []
    assert (code, err) == (2, "error: cannot write out/r: out became a symbolic link, not followed\n")


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_a_link_named_as_the_results_file_is_replaced_and_its_folders_links_followed(
    cli, tmp_path: Path, suffix: str
) -> None:
    """`-o latest.jsonl`, a link there (yours, or an earlier run's hook's: the two look alike):
    the results file replaces the link, and the file it named stays as it was. Before: `.jsonl`
    was written through it (then the link replaced by a file, with a store). A link among the
    folders on the way (`-o runs/r.jsonl`, `runs` a link of yours) leads where it led at the
    start. A new file has the mode `open` gives (0o666 less the umask), as before."""
    kept = write(tmp_path / "kept" / f"run-1{suffix}", "old\n")
    (tmp_path / f"latest{suffix}").symlink_to(f"kept/run-1{suffix}")
    (tmp_path / "runs").symlink_to("kept")
    write(tmp_path / "s.eval.yaml", "execution: {target: scripted}\ntests:\n  - {id: t1, input: hi}\n")
    before = os.umask(0o027)
    try:
        for output in (f"latest{suffix}", f"runs/run-2{suffix}"):
            code, out, err = cli("run", "s.eval.yaml", "-o", output, "--no-cache", "--store", "st")
            assert code == 0, out + err
    finally:
        os.umask(before)
    latest = tmp_path / f"latest{suffix}"
    assert not latest.is_symlink() and _results_in(latest) == ["t1"] and kept.read_text() == "old\n"
    assert stat.S_IMODE(latest.stat().st_mode) == 0o640
    assert sorted(os.listdir(kept.parent)) == [f"run-1{suffix}", f"run-2{suffix}"]
    assert _results_in(kept.parent / f"run-2{suffix}") == ["t1"]


@pytest.mark.parametrize("stop", [KeyboardInterrupt, OSError])
def test_a_results_file_interrupted_while_written_is_left_as_it_was(tmp_path: Path, stop: type[BaseException]) -> None:
    """Before: an interrupt (anything but an OSError) left `r.json.partial` behind."""
    path = write(tmp_path / "r.json", "the old results\n")

    def results():
        yield passing_result(1, "first").model_dump_json()
        raise stop()

    with pytest.raises(ConfigError if stop is OSError else stop):
        export_results(path, results())
    assert path.read_text() == "the old results\n" and os.listdir(tmp_path) == ["r.json"]
