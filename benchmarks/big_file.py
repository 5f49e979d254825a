"""Memory and time of one big eval file: `convoeval validate` and `convoeval run` (whole processes).

    python benchmarks/big_file.py                # validate all three forms, run the one big file (~2.5 min)
    python benchmarks/big_file.py --runs all     # run all three forms too (~7 min)
    python benchmarks/big_file.py --tests 2000   # a quick look

The same tests (20,000 conversations of 5 turns, one `contains` assertion per turn, about 9 MB
of YAML) are written three ways: one YAML eval file, one eval file with `tests: big.jsonl`, and
ten eval files of 2,000 tests each. Each form is validated (`convoeval validate`), and run
(`convoeval run --target openai:bench-target --quiet --no-cache`: 100,000 calls, about two
minutes each) against benchmarks/fake_server.py answering at once. Every process is measured
whole: wall time and peak RSS (from wait4), the fake server in its own process. The bar: under
300 MB peak RSS, as for 10,000 conversations x 10 turns in 100 files (benchmarks/run.py).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from run import Measure, Server, measure  # benchmarks/run.py: the fake server and whole-process measures

TESTS, TURNS, SPLIT_FILES, CONCURRENCY, RSS_BAR_MB = 20_000, 5, 10, 50, 300


def test_yaml(i: int, turns: int) -> str:
    lines = [f"  - id: c{i:05d}\n    mode: conversation\n    turns:"]
    for t in range(1, turns + 1):
        lines.append(f"      - input: 'q{t} of c{i:05d}'\n        assertions: [{{type: contains, value: Reply}}]")
    return "\n".join(lines)


def test_json(i: int, turns: int) -> str:
    turn_list = [
        {"input": f"q{t} of c{i:05d}", "assertions": [{"type": "contains", "value": "Reply"}]}
        for t in range(1, turns + 1)
    ]
    return json.dumps({"id": f"c{i:05d}", "mode": "conversation", "turns": turn_list})


def write_forms(work: Path, tests: int, turns: int, split: int) -> dict[str, list[Path]]:
    """The three forms of the same tests: one YAML file, YAML + JSONL, `split` YAML files."""
    one = work / "big.eval.yaml"
    one.write_text("tests:\n" + "\n".join(test_yaml(i, turns) for i in range(tests)) + "\n")
    (work / "big.jsonl").write_text("\n".join(test_json(i, turns) for i in range(tests)) + "\n")
    jsonl = work / "jsonl.eval.yaml"
    jsonl.write_text("tests: big.jsonl\n")
    per_file = tests // split
    parts = []
    for f in range(split):
        part = work / "split" / f"s{f:02d}.eval.yaml"
        part.parent.mkdir(exist_ok=True)
        part.write_text(
            "tests:\n" + "\n".join(test_yaml(i, turns) for i in range(f * per_file, (f + 1) * per_file)) + "\n"
        )
        parts.append(part)
    return {"yaml": [one], "jsonl": [jsonl], "split": parts}


FORM_NAMES = {"yaml": "one YAML file", "jsonl": "YAML + JSONL tests", "split": f"{SPLIT_FILES} YAML files"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=TESTS, help="conversations in all (default 20,000)")
    parser.add_argument("--turns", type=int, default=TURNS, help="turns per conversation (default 5)")
    parser.add_argument(
        "--runs", default="yaml", help="forms to run: yaml, jsonl, split (comma-separated), all or none"
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    runs = list(FORM_NAMES) if args.runs == "all" else [] if args.runs == "none" else args.runs.split(",")
    if unknown := set(runs) - set(FORM_NAMES):
        parser.error(f"unknown form(s) {', '.join(sorted(unknown))}; give yaml, jsonl, split, all or none")

    work = Path(tempfile.mkdtemp(prefix="convoeval-bigfile-"))
    forms = write_forms(work, args.tests, args.turns, SPLIT_FILES)
    size_mb = (work / "big.eval.yaml").stat().st_size / 1e6
    print(f"work directory: {work}; {args.tests} tests x {args.turns} turns ({size_mb:.1f} MB of YAML)")
    calls = args.tests * args.turns
    rows: list[tuple[str, str, Measure, str]] = []
    server = Server(0.0) if runs else None
    try:
        for key, paths in forms.items():
            form, files = FORM_NAMES[key], [str(p) for p in paths]
            v = measure([sys.executable, "-m", "convoeval", "validate", *files], work, None)
            ok = v.exit_code == 0 and v.rss_mb < RSS_BAR_MB
            rows.append((form, "validate", v, "PASS" if ok else "FAIL" + (" (invalid)" if v.exit_code else "")))
            print(f"  {form}: validate {v.wall_s:.2f} s, {v.rss_mb:.0f} MB", flush=True)
            if server is None or key not in runs:
                continue
            store = work / f"state-{key}"
            argv = [
                sys.executable,
                "-m",
                "convoeval",
                "run",
                *files,
                "--target",
                "openai:bench-target",
                "--concurrency",
                str(CONCURRENCY),
                "--quiet",
                "--no-cache",
                "--store",
                str(store),
            ]
            r = measure(argv, work, server)
            ok = r.rss_mb < RSS_BAR_MB and r.calls == calls and r.exit_code == 0
            rows.append((form, "run", r, "PASS" if ok else f"FAIL (exit {r.exit_code}, {r.calls} calls)"))
            print(f"  {form}: run {r.wall_s:.2f} s, {r.rss_mb:.0f} MB, {r.calls} calls", flush=True)
            shutil.rmtree(store, ignore_errors=True)
    finally:
        if server is not None:
            server.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    print()
    header = f"{'form':<22} {'command':<9} {'wall s':>8} {'peak RSS MB':>12}  goal (< {RSS_BAR_MB} MB)"
    print(header)
    print("-" * len(header))
    for form, command, m, verdict in rows:
        print(f"{form:<22} {command:<9} {m.wall_s:>8.2f} {m.rss_mb:>12.0f}  {verdict}")


if __name__ == "__main__":
    main()
