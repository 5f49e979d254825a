"""The viewer over a real run store: pages, comparison, labels saved in the store and exported
as the labels.csv that `convoeval agreement` reads (the round trip goes through the CLI)."""

from __future__ import annotations

import csv
import io
import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from convoeval.report import LabelStore
from convoeval.report.viewer import Viewer

from .conftest import write
from .report_data import SUITE, battles, reply

STORE = Path(".convoeval") / "runs.sqlite"


#: Keeps the viewer's cookie, as a browser does: each test first opens `login_url`.
_OPENER = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    try:
        with _OPENER.open(urllib.request.Request(url, headers=headers or {}), timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _post(url: str, body: dict | str, content_type: str = "application/json") -> tuple[int, dict]:
    data = (body if isinstance(body, str) else json.dumps(body)).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": content_type}, method="POST")
    try:
        with _OPENER.open(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


@pytest.fixture
def two_runs(cli, fake_openai, tmp_path: Path) -> list[str]:
    """Two stored runs of the suite; in the second the greeting test fails."""
    fake_openai.reset(reply=reply)
    write(tmp_path / "suite.eval.yaml", SUITE)
    ids = []
    for fails in (False, True):
        reply.hello_fails = fails
        _, stdout, _ = cli("run", "suite.eval.yaml", "-t", "openai:m", "--judge", "openai:judge", "-q", "--no-cache")
        ids.append(next(line.split()[1].rstrip(":") for line in stdout.splitlines() if line.startswith("run ")))
    reply.hello_fails = False
    return ids


def test_viewer_pages_labels_and_agreement_round_trip(two_runs: list[str], cli, tmp_path: Path) -> None:
    first, second = two_runs
    with Viewer(STORE, port=0) as viewer:
        assert _get(viewer.login_url)[0] == 200  # the cookie, for what follows
        status, home = _get(viewer.url)
        assert status == 200 and first in home and second in home and 'action="/compare"' in home
        status, page = _get(f"{viewer.url}run/{second}")
        assert status == 200 and page.count('class="label-form"') == 2  # the two rubric graders
        assert "&lt;script&gt;window.PWNED" in page and "<script>window.PWNED" not in page
        status, page = _get(f"{viewer.url}compare?a={first}&b={second}")
        assert status == 200 and page.index("greeting") < page.index("japan-trip")  # regressions first
        assert 'data-outcome="loss"' in page
        item = {"run_id": second, "suite": "travel", "test_id": "japan-trip", "target": "openai:m"}
        labels = [
            ("turn-1", "rubrics", "ana", "5"),
            ("conversation", "rubrics", "ana", "4"),
            ("turn-1", "rubrics", "ben", "5"),
            ("conversation", "rubrics", "ben", "2"),
            ("turn-1", "rubrics", "ana", "4"),
        ]  # ana changes her mind: replaced, not added
        for entry, name, rater, value in labels:
            status, answer = _post(
                f"{viewer.url}api/labels",
                {**item, "entry": entry, "item": name, "rater": rater, "label": value, "comment": "ok"},
            )
            assert (status, answer) == (200, {"ok": True})
        status, text = _get(f"{viewer.url}labels.csv?run={second}")
    assert status == 200
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["item", "ana", "ben", "judge"]
    assert rows[1] == ["travel/japan-trip @ openai:m turn-1 rubrics", "4", "5", "5"]
    assert rows[2] == ["travel/japan-trip @ openai:m conversation rubrics", "4", "2", "5"]
    write(tmp_path / "labels.csv", text)
    code, stdout, stderr = cli("agreement", "labels.csv", "--categories", "1-5", "--format", "json")
    assert code == 0, stderr
    # pairwise agreement: (4, 5, 5) agrees in 1 of 3 pairs, (4, 2, 5) in none
    assert json.loads(stdout)["percent_agreement"]["value"] == pytest.approx(1 / 6)
    code, stdout, _ = cli(
        "agreement", "labels.csv", "--categories", "1-5", "--columns", "ana,judge", "--format", "json"
    )
    assert code == 0 and json.loads(stdout)["percent_agreement"]["value"] == pytest.approx(0.0)
    assert len(LabelStore(STORE).labels(second)) == 4


def test_viewer_refuses_bad_labels_foreign_hosts_and_unknown_runs(two_runs: list[str]) -> None:
    run = two_runs[0]
    with Viewer(STORE, port=0, scale="pass-fail") as viewer:
        assert _get(viewer.login_url)[0] == 200  # the cookie, for what follows
        base = {
            "run_id": run,
            "suite": "travel",
            "test_id": "japan-trip",
            "target": "openai:m",
            "entry": "turn-1",
            "item": "rubrics",
            "rater": "ana",
        }
        status, answer = _post(f"{viewer.url}api/labels", {**base, "label": "4"})
        assert status == 400 and answer["error"] == "label: '4' is not on the pass-fail scale (fail, pass)"
        status, answer = _post(f"{viewer.url}api/labels", {**base, "rater": " ", "label": "pass"})
        assert status == 400 and answer["error"].startswith("rater:")
        assert _post(f"{viewer.url}api/labels", "label=pass", "application/x-www-form-urlencoded")[0] == 415
        assert _post(f"{viewer.url}api/labels", {**base, "label": "pass"})[0] == 200
        assert _get(viewer.url, {"Host": "evil.example:80"})[0] == 403
        assert _get(f"{viewer.url}run/no-such-run")[0] == 404
        assert _get(f"{viewer.url}run/..%2F..%2Fetc%2Fpasswd")[0] == 400
        assert _get(f"{viewer.url}nothing-here")[0] == 404
        status, text = _get(f"{viewer.url}labels.csv?run={run}&scale=pass-fail")
        assert status == 200 and text.splitlines()[1].endswith(",pass,pass")


def test_viewer_shows_runs_of_its_store_never_files_of_its_folder(two_runs: list[str], tmp_path: Path) -> None:
    """`/run/NAME` opened any results file of the folder the viewer ran in (`results`, `r.JSONL`)
    and told which other files existed (`.env:1: invalid JSON`), to anyone on the machine."""
    stored = next((tmp_path / ".convoeval" / "results").glob("*.jsonl")).read_text()
    for name in ("results", "r.JSONL"):
        write(tmp_path / name, stored)
    write(tmp_path / ".env", "OPENAI_BASE_URL=http://127.0.0.1:9/v1\n")
    with Viewer(STORE, port=0) as viewer:
        assert _get(viewer.login_url)[0] == 200  # the cookie, for what follows
        for name in ("results", "r.JSONL", ".env"):
            status, text = _get(f"{viewer.url}run/{name}")
            assert status == 404 and text == f"{name}: no such results file or run (runs are in {STORE})", text
        assert _get(f"{viewer.url}run/{two_runs[0]}")[0] == 200


def test_viewer_answers_only_requests_that_carry_its_token(two_runs: list[str]) -> None:
    """Any user of the machine reaches 127.0.0.1: without a token, they read every stored run and
    saved labels. Now each start makes a token; `login_url` holds it and sets a cookie."""
    label = {"run_id": two_runs[0], "suite": "travel", "test_id": "japan-trip", "target": "openai:m"}
    label |= {"entry": "turn-1", "item": "rubrics", "rater": "eve", "label": "1"}
    with Viewer(STORE, port=0) as viewer, Viewer(STORE, port=0) as other:
        stranger = urllib.request.build_opener()  # no cookie
        for url in (viewer.url, f"{viewer.url}run/{two_runs[0]}", f"{viewer.url}?token=wrong", other.login_url):
            with pytest.raises(urllib.error.HTTPError) as refused:
                stranger.open(url.replace(other.url, viewer.url), timeout=10)
            assert refused.value.code == 403 and b"holds the viewer's token" in refused.value.read()
        request = urllib.request.Request(
            f"{viewer.url}api/labels", data=json.dumps(label).encode(), headers={"Content-Type": "application/json"}
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            stranger.open(request, timeout=10)
        assert refused.value.code == 403 and LabelStore(STORE).labels(two_runs[0]) == []
        with stranger.open(viewer.login_url, timeout=10) as response:
            cookie = response.headers["Set-Cookie"]
        assert cookie == f"{viewer.cookie}; HttpOnly; SameSite=Strict; Path=/"
        assert _get(f"{viewer.url}run/{two_runs[0]}", {"Cookie": viewer.cookie})[0] == 200
        assert _get(viewer.url, {"Cookie": other.cookie})[0] == 403  # another viewer's (another port's)


def test_viewer_arena_page(two_runs: list[str], tmp_path: Path) -> None:
    with Viewer(STORE, port=0, battles=[battles(tmp_path / "battles.jsonl")]) as viewer:
        assert _get(viewer.login_url)[0] == 200  # the cookie, for what follows
        assert 'href="/arena/0"' in _get(viewer.url)[1]
        status, page = _get(f"{viewer.url}arena/0")
    assert status == 200 and 'id="leaderboard"' in page and "no stored run has these targets" in page


def test_view_command_refuses_a_busy_port_and_missing_battles(cli, tmp_path: Path) -> None:
    with Viewer(STORE, port=0) as viewer:
        port = viewer.server.server_address[1]
        code, _, stderr = cli("view", "--port", str(port))
    assert code == 2 and stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}")
    code, _, stderr = cli("view", "--battles", "nope.jsonl")
    assert code == 2 and stderr.strip() == "error: nope.jsonl: file not found"


def test_viewer_pages_of_a_damaged_store_are_errors_not_dropped_connections(two_runs: list[str]) -> None:
    """Before: each page's handler thread ended in a traceback (sqlite3.DatabaseError, the
    StoreError of opening the store) and the browser got no answer."""
    data = STORE.read_bytes()
    STORE.write_bytes(data[: len(data) // 2])
    with Viewer(STORE, port=0) as viewer:
        _get(viewer.login_url)  # the cookie comes with the home page's error too
        for page in ("", f"run/{two_runs[0]}", f"compare?a={two_runs[0]}&b={two_runs[1]}"):
            status, text = _get(viewer.url + page)
            assert status == 400 and "runs.sqlite" in text and "malformed" in text, (page, status, text)
