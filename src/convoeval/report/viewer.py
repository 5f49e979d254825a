"""`convoeval view`: a small local web server over the run store (standard library only), and
the export of human labels as the `labels.csv` that `convoeval agreement` reads.

Pages: `/` the runs (and a form to compare two), `/run/ID` a run as the HTML report with a
label form under each judged grader, `/compare?a=ID&b=ID` two runs compared, `/arena/N` the
N-th battles file given. API: `POST /api/labels` (JSON) saves a label in the store,
`GET /labels.csv?run=ID` exports them for `convoeval agreement`.

It binds to 127.0.0.1 only, answers only requests whose Host is that address (or localhost)
and that carry its token (a random one each start: other users of the machine reach the port
too), and takes labels only as `application/json` (a cross-site form cannot send that without a
CORS preflight, which it never answers). The address it prints (`login_url`) holds the token;
opening it once sets a cookie (HttpOnly, SameSite=Strict) that the browser sends from then on.
"""

from __future__ import annotations

import csv
import hmac
import io
import json
import secrets
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, unquote, urlsplit

from pydantic import ValidationError

from ..engine import unreadable
from ..errors import ConvoevalError, first_problem
from ..results import EvaluationResult
from ..stats import flaky_in_store
from ._compare import compare_results, mark_flaky_history
from ._html import read_battle_records, render_comparison, render_report, render_runs
from ._labels import SCALES, JudgedItem, Label, LabelStore, Scale
from ._runs import LoadedRun, ReportInputError, list_runs, load_run, same_fingerprint

if TYPE_CHECKING:  # the statistics (and numpy) load when labels are used, not at every start-up
    from ..stats import JudgeScore

HOST = "127.0.0.1"
MAX_BODY = 64 * 1024


def judged_items(result: EvaluationResult, scale: Scale) -> list[JudgedItem]:
    """The labelable items of a result (graders that called a judge) with the judge's value on
    the scale (its raw 1-5 value, its 0-1 score binned, or its verdict), as `agreement --runs`."""
    from ..stats import categorise, judge_scores

    categories = SCALES[scale]
    items = []
    for key, score in judge_scores([result]).items():
        if score.judged:
            category = categorise(score, categories)
            items.append(
                JudgedItem(
                    entry=key[3],
                    grader=key[4].split("/")[0].split("#")[0],
                    item=key[4],
                    judge=None if category is None else str(category),
                )
            )
    return items


def export_labels_csv(labels: LabelStore, run_id: str, results: list[EvaluationResult], scale: Scale) -> str:
    """`item,<rater>...,judge`: one row per labelled item of the run, one column per rater, and the
    judge's value on the same scale; `convoeval agreement labels.csv --categories 1-5` reads it."""
    from ..stats import categorise, judge_scores
    from ..stats._runs import item_label

    judge: dict[tuple[str, str, str, str, str], JudgeScore] = {
        (key[0] or "", key[1], key[2], key[3], key[4]): score for key, score in judge_scores(results).items()
    }
    categories = SCALES[scale]
    rows: dict[tuple[str, str, str, str, str], dict[str, str]] = {}
    raters: dict[str, None] = {}
    for label in labels.labels(run_id):
        raters.setdefault(label.rater)
        rows.setdefault((label.suite, label.test_id, label.target, label.entry, label.item), {})[label.rater] = (
            label.label
        )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["item", *raters, "judge"])
    for key, given in rows.items():
        score = judge.get(key)
        category = categorise(score, categories) if score is not None else None
        writer.writerow(
            [
                item_label((key[0] or None, *key[1:])),
                *(given.get(r, "") for r in raters),
                "" if category is None else category,
            ]
        )
    return out.getvalue()


class Viewer:
    """The viewer server; `start()` serves in a background thread, `serve_forever()` in this one.

    Example:
        with Viewer(".convoeval/runs.sqlite", port=0) as viewer:
            print(viewer.url)
    """

    def __init__(self, store: str | Path, *, port: int = 8765, scale: Scale = "1-5", battles: list[Path] | None = None):
        self.store = Path(store)
        self.scale: Scale = scale
        self.battles = list(battles or [])
        self.token = secrets.token_urlsafe(24)
        self.server = ThreadingHTTPServer((HOST, port), _handler(self))
        self.server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The home page's address, without the token (see `login_url`)."""
        return f"http://{HOST}:{self.server.server_address[1]}/"

    @property
    def login_url(self) -> str:
        """The home page's address with the token: a browser that opens it is let in (a cookie)."""
        return f"{self.url}?token={self.token}"

    @property
    def cookie(self) -> str:
        """The cookie that lets a request in: `name=token` (a name of its own for each port)."""
        return f"convoeval-view-{self.server.server_address[1]}={self.token}"

    def start(self) -> Viewer:
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, name="convoeval-viewer", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.server.serve_forever(poll_interval=0.2)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> Viewer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- pages -------------------------------------------------------------------------
    def page(self, path: str, query: dict[str, str]) -> tuple[int, str, str | bytes, dict[str, str]]:
        """(status, content type, body, extra headers) for a GET."""
        parts = [unquote(p) for p in path.strip("/").split("/") if p]
        html = "text/html; charset=utf-8"
        if not parts:
            return (
                200,
                html,
                render_runs(list_runs(self.store), store=str(self.store), battles=[b.name for b in self.battles]),
                {},
            )
        if parts[0] == "run" and len(parts) == 2:
            run = self._run(parts[1])
            labels = LabelStore(self.store).labels(run.run_id or parts[1])
            return (
                200,
                html,
                render_report(
                    run.results,
                    title=run.name,
                    subtitle=f"started {run.started or '-'} · labels on a {self.scale} scale",
                    viewer={"run_id": run.run_id, "scale": self.scale},
                    scale=self.scale,
                    labels=labels,
                    label_items=lambda result: judged_items(result, self.scale),
                    flaky=flaky_in_store(self.store, run.fingerprints.values()),
                ),
                {},
            )
        if parts == ["compare"]:
            a, b = self._run(query.get("a", "")), self._run(query.get("b", ""))
            tolerance = float(query.get("tolerance", "0") or 0)
            comparison = compare_results(a.results, b.results, tolerance=tolerance, name_a=a.name, name_b=b.name)
            comparison.same_fingerprint = same_fingerprint(a, b)
            mark_flaky_history(
                comparison, flaky_in_store(self.store, {*a.fingerprints.values(), *b.fingerprints.values()})
            )
            page = render_comparison(
                comparison, viewer={"a": a.run_id, "b": b.run_id}, results_a=a.results, results_b=b.results
            )
            return 200, html, page, {}
        if parts[0] == "arena" and len(parts) == 2 and parts[1].isdigit() and int(parts[1]) < len(self.battles):
            path_ = self.battles[int(parts[1])]
            records = read_battle_records(path_)
            arena_run = self._arena_run(records, query.get("run"))
            return (
                200,
                html,
                render_report(
                    arena_run.results if arena_run else [],
                    title=f"arena {path_.name}",
                    subtitle=arena_run.name if arena_run else "no stored run has these targets",
                    arena=records,
                    viewer={},
                ),
                {},
            )
        if parts == ["labels.csv"]:
            run = self._run(query.get("run", ""))
            scale = query.get("scale", self.scale)
            if scale not in SCALES:
                raise ReportInputError(f"scale: {scale!r} is not one of {', '.join(SCALES)}")
            text = export_labels_csv(LabelStore(self.store), run.run_id or "", run.results, scale)  # type: ignore[arg-type]
            return (
                200,
                "text/csv; charset=utf-8",
                text,
                {"Content-Disposition": f'attachment; filename="labels-{run.run_id}.csv"'},
            )
        return 404, "text/plain; charset=utf-8", "not found", {}

    def _run(self, ref: str) -> LoadedRun:
        if not ref or "/" in ref:
            raise ReportInputError(f"run: {ref!r} is not a run id of the store")
        return load_run(ref, self.store, files=False)  # never a file of the folder the viewer runs in

    def _arena_run(self, records: Sequence[Mapping[str, object]], ref: str | None) -> LoadedRun | None:
        if ref:
            return self._run(ref)
        wanted = {r["model_a"] for r in records} | {r["model_b"] for r in records}
        for info in list_runs(self.store):
            if wanted <= set(info.targets):
                return self._run(info.id)
        return None

    def save_label(self, body: bytes) -> tuple[int, dict[str, object]]:
        try:
            label = Label.model_validate_json(body)
        except ValidationError as exc:
            return 400, {"error": str(first_problem(exc, "label"))}
        allowed = [str(c) for c in SCALES[self.scale]]
        if label.label not in allowed:
            return 400, {"error": f"label: {label.label!r} is not on the {self.scale} scale ({', '.join(allowed)})"}
        if label.run_id not in {info.id for info in list_runs(self.store)}:
            return 404, {"error": f"run_id: no run {label.run_id!r} in the store"}
        LabelStore(self.store).save(label)
        return 200, {"ok": True}


def _handler(viewer: Viewer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "convoeval-view"
        set_cookie: str | None = None

        def log_message(self, format: str, *args: object) -> None:  # quiet: no access log
            return None

        def _host_ok(self) -> bool:
            host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
            return host in (HOST, "localhost")

        def _admitted(self) -> bool:
            """Whether the request carries the token: the viewer's cookie, or `?token=` (which
            sets the cookie for the requests that follow)."""
            self.set_cookie = None
            name, token = viewer.cookie.split("=", 1)
            try:
                given = SimpleCookie(self.headers.get("Cookie") or "")
            except CookieError:
                given = SimpleCookie()
            if name in given and hmac.compare_digest(given[name].value.encode(), token.encode()):
                return True
            query = parse_qs(urlsplit(self.path).query).get("token", [""])[-1]
            if hmac.compare_digest(query.encode(), token.encode()):
                self.set_cookie = f"{viewer.cookie}; HttpOnly; SameSite=Strict; Path=/"
                return True
            return False

        def _refused(self) -> bool:
            """Answer 403 to a request from a foreign Host or without the token; True if refused."""
            if not self._host_ok():
                self._send(403, "text/plain", "forbidden host")
            elif not self._admitted():
                self._send(403, "text/plain", "open the address `convoeval view` printed: it holds the viewer's token")
            else:
                return False
            return True

        def _send(
            self, status: int, content_type: str, body: str | bytes, headers: dict[str, str] | None = None
        ) -> None:
            data = body.encode("utf-8") if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Cache-Control", "no-store")
            if self.set_cookie:
                self.send_header("Set-Cookie", self.set_cookie)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self._refused():
                return
            split = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(split.query).items()}
            try:
                self._send(*viewer.page(split.path, query))
            except (ConvoevalError, ValueError) as exc:  # a damaged store too (StoreError)
                self._send(404 if "no such" in str(exc) else 400, "text/plain; charset=utf-8", str(exc))
            except sqlite3.Error as exc:  # the labels of a damaged store
                self._send(500, "text/plain; charset=utf-8", unreadable(viewer.store, exc))

        def do_POST(self) -> None:
            if self._refused():
                return
            if urlsplit(self.path).path != "/api/labels":
                return self._send(404, "text/plain", "not found")
            if (self.headers.get("Content-Type") or "").split(";")[0].strip() != "application/json":
                return self._send(415, "application/json", json.dumps({"error": "send labels as application/json"}))
            given = (self.headers.get("Content-Length") or "").strip()
            if not given.isdigit():  # missing, negative or not a number: never read an unbounded body
                self.close_connection = True
                return self._send(400, "application/json", json.dumps({"error": "send a valid Content-Length"}))
            if int(given) > MAX_BODY:
                self.close_connection = True
                return self._send(413, "application/json", json.dumps({"error": "label too large"}))
            try:
                status, answer = viewer.save_label(self.rfile.read(int(given)))
            except ConvoevalError as exc:
                status, answer = 500, {"error": str(exc)}
            except sqlite3.Error as exc:
                status, answer = 500, {"error": unreadable(viewer.store, exc)}
            self._send(status, "application/json", json.dumps(answer))

    return Handler
