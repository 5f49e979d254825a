"""Every command with bad input, as a newcomer gives it: one `error:` line (control characters
escaped), exit 2, nothing half written. The cases are those a sweep of every command found
wrong (a traceback, an unclear message); tests run as root, so an unreadable file is a link loop,
which fails for root too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import convoeval

from .conftest import write

#: The datasets `convoeval import` reads from a file.
IMPORT_KINDS = ["mt-bench", "multiwoz", "tau-bench", "transcripts", "deepeval"]


@pytest.fixture
def binary(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_bytes(bytes([0xD8, 0x00, 0xFF, 0x10]) * 200)
    return path


@pytest.mark.parametrize("kind", IMPORT_KINDS)
def test_importing_a_binary_file_is_an_error_line(cli, binary: Path, kind: str) -> None:
    """Before: `import tau-bench` of a binary file ended in a UnicodeDecodeError traceback
    (exit 1); the others said `cannot read: 'utf-8' codec can't decode ...`."""
    code, out, err = cli("import", kind, binary, "-o", "out.eval.yaml")
    assert code == 2 and err == f"error: {binary}: not a text file: invalid UTF-8 (byte 0xd8 at offset 0)\n"
    assert not Path("out.eval.yaml").exists()


@pytest.mark.parametrize("kind", [*IMPORT_KINDS, "promptfoo", "inspect", "otel"])
def test_importing_a_file_name_too_long_is_an_error_line(cli, kind: str) -> None:
    """Before: OSError (File name too long) from `Path.is_file`, a traceback, whatever the kind."""
    name = "x" * 300 + ".json"
    code, _, err = cli("import", kind, name, "-o", "out.eval.yaml")
    assert (code, err) == (2, f"error: {name}: cannot read: File name too long\n")


@pytest.mark.parametrize("kind", ["mt-bench", "tau-bench", "deepeval"])
def test_importing_a_folder_says_it_is_a_folder(cli, tmp_path: Path, kind: str) -> None:
    """Before: `data.jsonl:1: no such file` for a folder that is there."""
    (tmp_path / "data.jsonl").mkdir()
    code, _, err = cli("import", kind, "data.jsonl")
    assert (code, err) == (2, "error: data.jsonl is a folder; give the dataset file\n")


def test_importing_a_file_that_makes_no_test_writes_nothing(cli, tmp_path: Path) -> None:
    """Before: an empty (or foreign) file gave an eval file with no test, written, then
    `out.eval.yaml:10: tests: must contain at least one test`."""
    (tmp_path / "empty.jsonl").write_text("")
    code, _, err = cli("import", "mt-bench", "empty.jsonl", "-o", "out.eval.yaml")
    assert code == 2 and err.startswith("error: empty.jsonl: no test could be made from this file")
    assert not (tmp_path / "out.eval.yaml").exists()


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: p.write_bytes(b"\xd8\x00" * 50), "not a text file: invalid UTF-8 (byte 0xd8 at offset 0)"),
        (lambda p: p.mkdir(), "is a folder; give a file"),
        (lambda p: os.symlink(p.name, p), "cannot read: Too many levels of symbolic links"),
    ],
    ids=["binary", "folder", "link-loop"],
)
@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_results_file_that_cannot_be_read_is_said_plainly(cli, tmp_path: Path, make, said: str, suffix: str) -> None:
    """Before: `cannot read: 'utf-8' codec can't decode byte 0xd8 in position 0: invalid
    continuation byte`, `cannot read: [Errno 21] Is a directory: 'r.jsonl'`."""
    path = tmp_path / f"r{suffix}"
    make(path)
    for args in (("report", path.name, "--html", "o.html"), ("compare", path.name, path.name)):
        code, _, err = cli(*args)
        sep = " " if said.startswith("is a") else ": "
        assert (code, err) == (2, f"error: r{suffix}{sep}{said}\n"), args
    assert not (tmp_path / "o.html").exists()


@pytest.mark.parametrize(
    ("line", "field", "shown"),
    [
        ('"score": NaN', "score", "nan"),
        ('"score": 1e308', "score", "1e+308"),
        ('"score": -1', "score", "-1.0"),
        (
            '"score": 1, "scores": [{"name": "turn-1", "type": "turn", "score": Infinity, "verdict": "pass"}]',
            "scores[0].score",
            "inf",
        ),
    ],
)
def test_a_result_whose_score_is_not_from_0_to_1(cli, tmp_path: Path, line: str, field: str, shown: str) -> None:
    """Before: `compare` ended in `ValueError: cannot convert float NaN to integer` (OverflowError
    for 1e308) from the significance gate's power; the reader now refuses the score."""
    key = '"target": "m", "verdict": "pass", "execution_status": "ok", "threshold": 0.5'
    write(tmp_path / "a.jsonl", "".join(f'{{"test_id": "t{i}", {key}, "score": 0.5}}\n' for i in range(3)))
    bad = "".join(f'{{"test_id": "t{i}", {key}, "score": 1.0}}\n' for i in range(2))
    write(tmp_path / "b.jsonl", bad + f'{{"test_id": "t2", {key}, {line}}}\n')
    said = f"error: b.jsonl:3: {field}: must be from 0 to 1 (or null), got {shown}; give results files written by `convoeval run -o`\n"
    for args in (
        ("compare", "a.jsonl", "b.jsonl"),
        ("report", "b.jsonl", "--html", "o.html"),
        ("agreement", "--runs", "a.jsonl", "b.jsonl"),
    ):
        assert cli(*args)[::2] == (2, said), args
    assert not (tmp_path / "o.html").exists()


def test_an_error_naming_a_path_with_control_characters_is_one_escaped_line(cli, tmp_path: Path) -> None:
    """A path with a newline or an ESC sequence must not corrupt the terminal nor split the
    error: every command fails through one helper that escapes them."""
    name = "r\x1b[2J\nx.jsonl"
    for args in (
        ("report", name, "--html", "o.html"),
        ("arena", "--battles", name),
        ("agreement", "--runs", name, name),
        ("runs", "show", name, "--store", str(tmp_path / "state")),
    ):
        code, _, err = cli(*args)
        assert code == 2 and err.count("\n") == 1 and "\x1b" not in err, (args, err)
        assert "r\\x1b[2J\\nx.jsonl" in err, (args, err)
    write(tmp_path / "bad\x1b[31m.eval.yaml", "tests:\n  - {id: t}\n")
    code, _, err = cli("validate", "bad\x1b[31m.eval.yaml")
    assert code == 2 and "\x1b" not in err and err.startswith("bad\\x1b[31m.eval.yaml:2"), err


def test_init_in_a_link_that_leads_nowhere(cli, tmp_path: Path) -> None:
    """Before: `cannot write loop/first.eval.yaml: File exists`."""
    os.symlink("loop", tmp_path / "loop")
    code, _, err = cli("init", "loop")
    assert (code, err) == (2, "error: loop is a link that leads nowhere (broken, or a loop), not a folder\n")


@pytest.mark.parametrize(
    "args",
    [("runs",), ("runs", "flaky"), ("runs", "show", "last"), ("cache", "stats"), ("cache", "clear")],
)
def test_a_store_that_is_a_file(cli, tmp_path: Path, args: tuple[str, ...]) -> None:
    """Before: `runs --store FILE` listed 0 runs in FILE/runs.sqlite and exited 0."""
    (tmp_path / "state").write_text("not a folder")
    code, _, err = cli(*args, "--store", "state")
    assert (code, err) == (
        2,
        "error: state is a file; --store (or CONVOEVAL_HOME) names the folder that holds runs.sqlite\n",
    )
    code, _, err = cli("cache", "stats", "--cache-dir", "state")
    assert (code, err) == (2, "error: state is a file; --cache-dir names the folder that holds cache.sqlite\n")


def test_output_files_go_into_folders_made_for_them(cli, tmp_path: Path) -> None:
    """`-o`, `--html` and `--junit` into folders that do not exist yet: made, files written whole
    (no staging folder left beside them)."""
    write(tmp_path / "targets.yaml", "targets:\n  - {name: bot, provider: scripted, default: hi}\n")
    write(tmp_path / "s.eval.yaml", "tests:\n  - {id: t, input: hi, assertions: [{type: contains, value: hi}]}\n")
    code, _, err = cli(
        "run",
        "s.eval.yaml",
        "-t",
        "bot",
        "--store",
        "st",
        "-o",
        "a/b/r.jsonl",
        "--html",
        "c/r.html",
        "--junit",
        "d/j.xml",
    )
    assert code == 0, err
    assert [os.listdir(tmp_path / d) for d in ("a/b", "c", "d")] == [["r.jsonl"], ["r.html"], ["j.xml"]]
    code, _, err = cli("report", "a/b/r.jsonl", "--markdown", "e/f/s.md", "--html", "a/b")
    assert (code, err) == (2, "error: a/b is a folder; give a file name\n")
    assert not (tmp_path / "e").exists()


def test_report_o_writes_the_format_its_suffix_names(cli, tmp_path: Path) -> None:
    """`report -o FILE`, as `run -o` takes it: the format by suffix; another suffix, or the same
    format asked twice, is an error line and nothing written."""
    write(tmp_path / "targets.yaml", "targets:\n  - {name: bot, provider: scripted, default: hi}\n")
    write(tmp_path / "s.eval.yaml", "tests:\n  - {id: t, input: hi, assertions: [{type: contains, value: hi}]}\n")
    assert cli("run", "s.eval.yaml", "-t", "bot", "-o", "r.jsonl")[0] == 0
    for name, start in (("r.html", "<!doctype html>"), ("r.xml", "<?xml"), ("r.md", "#")):
        code, out, err = cli("report", "r.jsonl", "-o", name)
        assert (code, out) == (0, f"wrote {name}\n"), err
        assert (tmp_path / name).read_text().lower().startswith(start)
    code, _, err = cli("report", "r.jsonl", "-o", "r.txt")
    assert code == 2 and err.startswith("error: -o r.txt: the suffix names the format: .html, .xml"), err
    code, _, err = cli("report", "r.jsonl", "-o", "a.html", "--html", "b.html")
    assert (code, err) == (2, "error: -o a.html and --html b.html: give one of them\n")
    assert not (tmp_path / "r.txt").exists() and not (tmp_path / "a.html").exists()


@pytest.mark.parametrize(
    "args",
    [
        ("import", "deepeval", "data.json"),
        ("import", "langfuse", "data.json"),
        ("import", "otel", "data.json"),
        ("import", "inspect", "data.json"),
        ("grade", "results.jsonl", "--graders", "data.json"),
    ],
    ids=lambda args: args[1],
)
def test_a_binary_file_any_importer_reads_is_an_error_line(cli, tmp_path: Path, args: tuple[str, ...]) -> None:
    """Before: `grade --graders BINARY` (and the JSON importers) ended in a UnicodeDecodeError
    traceback; each importer read its files its own way."""
    (tmp_path / "data.json").write_bytes(b"\xd8\x00" * 50)
    chat = '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}'
    write(tmp_path / "results.jsonl", chat + "\n")
    code, _, err = cli(*args)
    assert (code, err) == (2, "error: data.json: not a text file: invalid UTF-8 (byte 0xd8 at offset 0)\n")


def test_an_inspect_log_with_another_suffix_is_refused_before_any_work(cli, tmp_path: Path) -> None:
    """Said with the file's own name (not the hidden folder it is first written in)."""
    write(tmp_path / "targets.yaml", "targets:\n  - {name: bot, provider: scripted, default: hi}\n")
    write(tmp_path / "s.eval.yaml", "tests:\n  - {id: t, input: hi}\n")
    assert cli("run", "s.eval.yaml", "-t", "bot", "--store", "st", "-o", "r.jsonl")[0] == 0
    code, _, err = cli("report", "r.jsonl", "--inspect-log", "log.txt")
    assert (code, err) == (2, "error: log.txt: an Inspect log is a .eval or .json file\n")


def _loop(folder: Path, name: str) -> None:
    os.symlink(f"{name}.other", folder / name)
    os.symlink(name, folder / f"{name}.other")


def test_a_link_loop_where_a_suite_names_a_file_or_results_go(cli, tmp_path: Path) -> None:
    """Before: `tests: file://loop.eval.yaml`, an llm-grader's `prompt: file://` and `-o` onto a
    link loop ended in `RuntimeError: Symlink loop` tracebacks (exit 1)."""
    _loop(tmp_path, "loop.eval.yaml")
    _loop(tmp_path, "loop.jsonl")
    _loop(tmp_path, "loop.md")
    write(tmp_path / "inc.eval.yaml", "tests: file://loop.eval.yaml\n")
    write(
        tmp_path / "graded.eval.yaml",
        "tests:\n  - id: a\n    input: hi\n    assertions: [{type: llm-grader, prompt: file://loop.md}]\n",
    )
    write(tmp_path / "ok.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    assert cli("validate", "inc.eval.yaml")[1:] == (
        "",
        "inc.eval.yaml:1: tests: loop.eval.yaml: a symbolic link loop\n",
    )
    code, _, err = cli("validate", "graded.eval.yaml")
    assert (
        code == 2 and err.startswith("graded.eval.yaml:4:") and err.endswith("prompt: loop.md: a symbolic link loop\n")
    ), err
    code, _, err = cli("run", "ok.eval.yaml", "--target", "echo", "-o", "loop.jsonl")
    assert (code, err) == (2, "error: cannot write results to loop.jsonl: loop.jsonl: a symbolic link loop\n")


def test_a_category_range_too_large_for_agreement(cli, tmp_path: Path) -> None:
    """Before: `--categories 1-1000000000` was killed by the kernel for memory; `1-1000` asked
    numpy for 7.45 GiB (arrays of categories squared, for every bootstrap resample)."""
    labels = Path(__file__).resolve().parents[1] / "examples" / "agreement" / "labels.csv"
    code, _, err = cli("agreement", labels, "--categories", "1-1000000000")
    assert (code, err) == (2, "error: category range '1-1000000000': at most 100 categories\n")


@pytest.mark.parametrize(
    ("kind", "source", "line", "said"),
    [
        ("langfuse", "langfuse/traces-export.jsonl", 2, "not a Langfuse trace (a JSON object with an id)"),
        ("otel", "otel/otlp-spans.jsonl", 2, "expected OTLP JSON (`resourceSpans`) or an exported span"),
    ],
)
def test_an_import_line_that_is_no_record_is_an_error_not_left_out(
    cli, tmp_path: Path, kind: str, source: str, line: int, said: str
) -> None:
    """Before: a Langfuse trace without its `id`, or a line holding `5`, was left out and the
    import said `1 test(s) written` (other importers name such a line)."""
    lines = (Path(__file__).parent / "data" / source).read_text().splitlines()
    lines.insert(line - 1, '{"name": "faq", "input": "hello"}' if kind == "langfuse" else "5")
    write(tmp_path / "broken.jsonl", "\n".join(lines) + "\n")
    code, _, err = cli("import", kind, "broken.jsonl", "-o", "out.eval.yaml")
    assert code == 2 and err.startswith(f"error: broken.jsonl:{line}: {said}"), err
    assert not (tmp_path / "out.eval.yaml").exists()


@pytest.mark.parametrize(
    ("file", "text", "said"),
    [
        (
            "s.eval.yaml",
            "tests:\n  - id: a\n    input: hi\n    assertions: [{type: contains, value: hi, weight: .inf}]\n",
            "s.eval.yaml:4: tests[0].assertions[0].weight: Input should be a finite number",
        ),
        (
            "targets.yaml",
            "targets:\n  - {name: t, provider: openai, model: m, temperature: .nan}\n",
            "targets.yaml:2: targets[0].temperature: Input should be a finite number",
        ),
        (
            "targets.yaml",
            "targets:\n  - {name: t, provider: openai, model: m, max_tokens: 0}\n",
            "targets.yaml:2: targets[0].max_tokens: Input should be greater than or equal to 1",
        ),
    ],
)
def test_numbers_that_would_change_a_verdict_or_a_request_unsaid(
    cli, tmp_path: Path, file: str, text: str, said: str
) -> None:
    """Before: `weight: .inf` made the turn's score NaN (null) and the test fail; a target's
    `temperature: .nan` was sent as null and `max_tokens: 0` left out, both without a word."""
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    write(tmp_path / file, text)
    code, out, err = cli("run", "s.eval.yaml", "--target", "t") if file == "targets.yaml" else cli("validate", file)
    assert code == 2 and said in out + err, out + err


def test_a_tests_list_entry_is_confined_and_a_loop_is_said(cli, tmp_path: Path) -> None:
    """Before: `tests: [file://loop.eval.yaml]` was a `RuntimeError` traceback, and an entry
    could include a file outside the suite's folder and repository, which `tests: file://`
    refuses."""
    _loop(tmp_path, "loop.eval.yaml")
    write(tmp_path / "s.eval.yaml", "tests:\n  - file://loop.eval.yaml\n  - file://../outside.yaml\n")
    write(tmp_path.parent / "outside.yaml", "- {id: x, input: hi}\n")
    code, _, err = cli("validate", "s.eval.yaml")
    assert code == 2 and "s.eval.yaml:2: tests[0]: loop.eval.yaml: a symbolic link loop\n" in err, err
    assert "s.eval.yaml:3: tests[1]: ../outside.yaml is outside the suite's folder" in err, err


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: os.mkfifo(p), "not a regular file (a device, a pipe or a socket)"),
        (lambda p: os.symlink(p.name, p), "a symbolic link loop, or one to nothing"),
    ],
)
def test_an_eval_file_that_is_no_file_says_what_it_is(cli, tmp_path: Path, make, said: str) -> None:
    """Before: a pipe, a device or a link loop given to `validate` was `(file): no such file`."""
    make(tmp_path / "s.eval.yaml")
    assert cli("validate", "s.eval.yaml") == (2, "", f"s.eval.yaml:1: (file): {said}\n")


def test_use_target_names_that_never_reach_a_target(cli, tmp_path: Path) -> None:
    """Before: `{name: x, use_target: y}, {name: y, use_target: x}` said "no target named 'y'
    (names: none)", though `y` is defined."""
    write(tmp_path / "targets.yaml", "targets:\n  - {name: x, use_target: y}\n  - {name: y, use_target: x}\n")
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    code, out, err = cli("run", "s.eval.yaml", "--target", "x")
    assert code == 2 and "targets[0].use_target: 'y' is a use_target that reaches no target" in out + err, out + err


def test_a_run_that_does_not_exist_is_said_so(cli, tmp_path: Path) -> None:
    """Before: `runs show nosuch` said "its summary cannot be read (... no such ... run ...)"."""
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    write(tmp_path / "targets.yaml", "targets:\n  - {name: bot, provider: scripted, default: hello}\n")
    assert cli("run", "s.eval.yaml", "--target", "bot", "--store", "state")[0] == 0
    code, _, err = cli("runs", "show", "nosuch", "--store", "state")
    assert (code, err) == (
        2,
        f"error: nosuch: no such results file or run (runs are in {Path('state') / 'runs.sqlite'})\n",
    )


def test_a_run_whose_output_pipe_closes_goes_on(tmp_path: Path) -> None:
    """`convoeval run ... | head -1`: the run ended at the next line printed (click's exit 1 on
    EPIPE), left "interrupted", its `-o` file not written."""
    import subprocess
    import sys

    write(tmp_path / "targets.yaml", "targets:\n  - {name: bot, provider: scripted, default: hello}\n")
    tests = "".join(
        f"  - id: t{i}\n    input: hi\n    assertions: [{{type: contains, value: hello}}]\n" for i in range(3)
    )
    write(tmp_path / "s.eval.yaml", "tests:\n" + tests)
    argv = [
        sys.executable,
        "-m",
        "convoeval",
        "run",
        "s.eval.yaml",
        "--target",
        "bot",
        "--store",
        "state",
        "-o",
        "r.jsonl",
    ]
    process = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline().startswith(b"run ")
    process.stdout.close()  # as `head -1` does
    assert process.wait(timeout=120) == 0, process.stderr.read().decode()
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 3
    listed = subprocess.run(
        [*argv[:3], "runs", "--json", "--store", "state"], cwd=tmp_path, capture_output=True, text=True
    )
    assert '"status": "finished"' in listed.stdout, listed.stdout + listed.stderr


def test_an_otel_endpoint_that_is_no_url(cli, tmp_path: Path) -> None:
    """Before: `--otel-endpoint notaurl` tried to export and said "is the OTLP endpoint up?"."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    write(tmp_path / "targets.yaml", "targets:\n  - {name: bot, provider: scripted, default: hello}\n")
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    assert cli("run", "s.eval.yaml", "--target", "bot", "--store", "state")[0] == 0
    code, _, err = cli("report", "last", "--store", "state", "--otel-endpoint", "notaurl")
    assert (code, err) == (
        2,
        "error: --otel-endpoint 'notaurl' is not an http(s) URL like http://127.0.0.1:4318/v1/traces\n",
    )


@pytest.mark.parametrize(
    ("targets", "given", "said"),
    [
        ("targets:\n  - name: bot\n   provider: openai\n", "targets.yaml", "targets.yaml:3: (yaml): YAML syntax error"),
        (None, "nope.yaml", "targets file not found: nope.yaml"),
        (None, ".", "targets file . is a folder; give the file (its targets.yaml)"),
    ],
)
def test_validate_reads_the_targets_file_a_run_reads(cli, tmp_path: Path, targets, given: str, said: str) -> None:
    """Before: a suite naming no target was "1 file(s) valid" with a broken or missing
    `--targets` file, which `run` of it refused (exit 2)."""
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    if targets:
        write(tmp_path / given, targets)
    for args in (("validate", "s.eval.yaml"), ("run", "s.eval.yaml", "--target", "scripted")):
        code, out, err = cli(*args, "--targets", given)
        assert code == 2 and said in err, (args, out, err)


def test_validate_refuses_a_named_target_whose_provider_is_not_implemented(cli, tmp_path: Path) -> None:
    """Before: `validate` passed a suite whose `execution.target` has `provider: opnai`, which
    every run refused (exit 2)."""
    write(tmp_path / "targets.yaml", "targets:\n  - name: bot\n    provider: opnai\n    model: m\n")
    write(tmp_path / "s.eval.yaml", "execution:\n  target: bot\ntests:\n  - id: a\n    input: hi\n")
    code, out, err = cli("validate", "s.eval.yaml")
    assert code == 2 and err.startswith(
        f"s.eval.yaml:2: execution.target: target 'bot': {tmp_path / 'targets.yaml'}:3: targets[0].provider: "
        "provider 'opnai' is not implemented by convoeval (did you mean 'openai'?) (known: "
    ), out + err


@pytest.mark.parametrize(
    ("variable", "target", "value"),
    [
        ("OPENAI_BASE_URL", "openai:m", "localhost:8000/v1"),
        ("OPENAI_BASE_URL", "openai:m", "not a url"),
        ("ANTHROPIC_BASE_URL", "anthropic:m", "ftp://example.com"),
    ],
)
def test_a_server_url_variable_that_is_no_url_stops_the_run(
    cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variable: str, target: str, value: str
) -> None:
    """Before: each test's call was tried 5 times, then `connection error: not%20a%20url/chat/completions`,
    exit 3; the same value as a target's `base_url` was already one line, exit 2."""
    monkeypatch.setenv(variable, value)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    code, _, err = cli("run", "s.eval.yaml", "--target", target)
    assert (code, err) == (
        2,
        f"error: target {target!r}: {variable}: {value!r} is not an http(s) URL like http://localhost:8000/v1\n",
    )


def test_did_you_mean_ignores_case_and_names_run_options(cli, tmp_path: Path) -> None:
    """Before: `--target OpenAI:gpt-4o` and `convoeval.run(..., trails=3)` suggested nothing."""
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    code, _, err = cli("run", "s.eval.yaml", "--target", "OpenAI:gpt-4o")
    assert code == 2 and "unknown provider 'OpenAI' (did you mean 'openai'?)" in err, err
    with pytest.raises(convoeval.ConfigError, match=r"^run option trails: unknown option \(did you mean 'trials'\?\)$"):
        convoeval.run("s.eval.yaml", target="scripted", trails=3)


def test_a_misspelt_targets_file_field_gets_a_suggestion(cli, tmp_path: Path) -> None:
    """Before: `modle: m` was "unknown field for this provider (known: <29 names>)" alone."""
    write(tmp_path / "targets.yaml", "targets:\n  - name: bot\n    provider: openai\n    modle: m\n")
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    code, _, err = cli("validate", "s.eval.yaml")
    assert code == 2 and err.startswith(
        f"{tmp_path / 'targets.yaml'}:4: targets[0].modle: unknown field for this provider (did you mean 'model'?) (known: "
    ), err


def test_a_targets_file_field_is_suggested_by_the_name_a_file_writes(cli, tmp_path: Path) -> None:
    """Before: a python target's `calable:` suggested and listed `callable_ref`, a name no file writes."""
    write(tmp_path / "targets.yaml", "targets:\n  - {name: bot, provider: python, calable: agent.py:bot}\n")
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    code, _, err = cli("validate", "s.eval.yaml")
    assert code == 2 and "calable: unknown field for this provider (did you mean 'callable'?)" in err, err
    assert "callable_ref" not in err and " callable," in err


def test_an_http_target_url_that_is_no_url_says_so(cli, tmp_path: Path) -> None:
    """Before: `url: notaurl` was "the http provider needs a `url`", though it has one."""
    write(tmp_path / "targets.yaml", "targets:\n  - {name: h, provider: http, url: notaurl}\n")
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    code, _, err = cli("run", "s.eval.yaml", "--target", "h")
    assert (code, err) == (
        2,
        "error: target 'h': h: url: 'notaurl' is not an http(s) URL like http://localhost:8000/v1\n",
    )


def test_a_control_character_in_an_eval_file_is_named_on_its_line(cli, tmp_path: Path) -> None:
    """Before: `s.eval.yaml:1: (yaml): YAML error: unacceptable character #x0001: control
    characters are not allowed\\n  in "<unicode string>", position 89`: line 1, PyYAML's inside."""
    path = tmp_path / "s.eval.yaml"
    path.write_text('tests:\n  - id: a\n    input: "hi"\n    assertions:\n      - {type: contains, value: "a\x01b"}\n')
    assert cli("validate", "s.eval.yaml") == (
        2,
        "",
        "s.eval.yaml:5: (yaml): YAML error: character 0x0001: control characters are not allowed"
        " (write it as an escape in a double-quoted string)\n",
    )


def test_a_field_one_level_too_high_is_pointed_to_where_it_goes(cli, tmp_path: Path) -> None:
    """Before: a test's `trials: 3` was "unknown field 'trials'" alone (it goes in `execution`)."""
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n    trials: 3\n")
    assert cli("validate", "s.eval.yaml") == (
        2,
        "",
        "s.eval.yaml:4: tests[0].trials: unknown field 'trials' (did you mean 'execution.trials'?)\n",
    )


def test_a_dotenv_that_is_no_utf8_text_is_one_line(cli, tmp_path: Path) -> None:
    """Before: a `.env` written in Latin-1 (`PASSWORD=café`) ended every command in a
    UnicodeDecodeError traceback."""
    (tmp_path / ".env").write_bytes(b"PASSWORD=caf\xe9\n")
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    code, _, err = cli("validate", "s.eval.yaml")
    assert (code, err) == (2, f"error: {tmp_path / '.env'}: not a text file: invalid UTF-8 (byte 0xe9 at offset 12)\n")


def test_a_dotenv_line_that_is_no_assignment_is_named_once_with_its_file(cli, tmp_path: Path) -> None:
    """Before: "python-dotenv could not parse statement starting at line 2", naming no file."""
    write(tmp_path / ".env", "A=1\n=oops\nB=2\n")
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    code, out, err = cli("run", "s.eval.yaml", "--target", "scripted")
    assert code == 0 and err.count(".env:2: not a NAME=value line; ignored") == 1, err
    assert "python-dotenv" not in err


def test_a_grader_prompt_file_that_is_no_text_is_a_validate_error(cli, tmp_path: Path) -> None:
    """Before: `validate` passed it, and every test of the run was an error ("prompt file: 'utf-8'
    codec can't decode byte 0xbe in position 1: invalid start byte")."""
    (tmp_path / "judge.txt").write_bytes(b"Grade {{ output }} \xbe\n")
    write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - id: a\n    input: hi\n    assertions:\n      - {type: llm-grader, prompt: file://judge.txt}\n",
    )
    assert cli("validate", "s.eval.yaml") == (
        2,
        "",
        "s.eval.yaml:5: tests[0].assertions[0].prompt: judge.txt: not a text file: invalid UTF-8 (byte 0xbe at offset 19)\n",
    )


def test_a_peer_tools_field_name_points_to_convoevals(cli, tmp_path: Path) -> None:
    """Before: promptfoo's and DeepEval's `threshold` on an assertion was "unknown field" alone,
    and a turn's `content` (a chat message's field) suggested 'context'."""
    write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - id: a\n    mode: conversation\n    turns:\n      - content: hi\n"
        "        assertions:\n          - {type: contains, value: hi, threshold: 0.5}\n",
    )
    code, out, err = cli("validate", "s.eval.yaml")
    assert (code, out) == (2, "")
    assert (
        "s.eval.yaml:5: tests[0].turns[0].content: unknown field 'content' (did you mean 'input'? the user's message "
        "is `input`)" in err
    )
    assert (
        "s.eval.yaml:7: tests[0].turns[0].assertions[0].threshold: unknown field 'threshold' (did you mean "
        "'min_score'? promptfoo's and DeepEval's `threshold`)" in err
    )


def test_a_peer_tools_assertion_type_says_what_to_write(cli, tmp_path: Path) -> None:
    """Before: DeepEval's `g-eval` suggested 'td-eval', promptfoo's `python` had no hint."""
    write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - id: a\n    input: hi\n    assertions:\n      - {type: g-eval, criteria: polite}\n"
        "      - {type: python, value: 'output == 1'}\n",
    )
    code, out, err = cli("validate", "s.eval.yaml")
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "s.eval.yaml:5: tests[0].assertions[0].type: unknown assertion type 'g-eval': DeepEval's G-Eval is "
        "`llm-grader` with `criteria` (or `rubrics`)",
        "s.eval.yaml:6: tests[0].assertions[1].type: unknown assertion type 'python': promptfoo's `python` is a "
        "`code-grader` (`convoeval import promptfoo CONFIG` converts it)",
    ]
