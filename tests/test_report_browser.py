"""Browser tests: Debian's Chromium driven by Playwright (never a downloaded browser) opens the
HTML report from file:// and the viewer from its loopback server. Every request is observed:
none may leave 127.0.0.1 (or the file). Screenshots go to tests/artifacts/ (git-ignored)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from convoeval.cli import app
from convoeval.report.viewer import Viewer
from convoeval.testing import FakeOpenAIServer

from .conftest import write
from .report_data import SCRIPT_REPLY, SUITE, agent_result, reply

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


@pytest.fixture(scope="module")
def browser(runs: Runs) -> Iterator[object]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser):
    """A page whose every request is recorded; any request off the machine is refused."""
    context = browser.new_context(viewport={"width": 1200, "height": 900}, accept_downloads=True)
    outside: list[str] = []

    def guard(route) -> None:
        url = route.request.url
        if url.startswith(("file://", "http://127.0.0.1:", "data:")):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    context.route("**/*", guard)
    tab = context.new_page()
    tab.outside = outside
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.js_errors = errors
    yield tab
    context.close()
    assert outside == [], f"requests left 127.0.0.1: {outside}"
    assert errors == [], f"JavaScript errors: {errors}"


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


@dataclass
class Runs:
    root: Path
    first: str
    second: str


def _run_id(stdout: str) -> str:
    return next(line.split()[1].rstrip(":") for line in stdout.splitlines() if line.startswith("run "))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """Two real runs through the loopback fake (the second fails `greeting`) and an HTML report of
    the first plus an agent run; made before the browser starts (Playwright's sync API holds the
    thread's event loop, which `convoeval run` needs)."""
    root = tmp_path_factory.mktemp("browser")
    write(root / "suite.eval.yaml", SUITE)
    with FakeOpenAIServer(reply=reply) as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_BASE_URL", server.base_url)
        patch.setenv("OPENAI_API_KEY", "sk-test-browser")
        patch.chdir(root)

        def convoeval(*args: str) -> str:
            return CliRunner().invoke(app, list(args), catch_exceptions=False).stdout

        run = ("run", "suite.eval.yaml", "-t", "openai:m", "--judge", "openai:judge", "-q", "--no-cache")
        reply.hello_fails = False
        first = _run_id(convoeval(*run, "-o", "run.jsonl"))
        reply.hello_fails = True
        try:
            second = _run_id(convoeval(*run))
        finally:
            reply.hello_fails = False
        write(root / "all.jsonl", (root / "run.jsonl").read_text() + agent_result().model_dump_json() + "\n")
        convoeval("report", "all.jsonl", "--html", "report.html")
    yield Runs(root, first, second)


def test_html_report_from_file(page, runs: Runs) -> None:
    page.goto((runs.root / "report.html").as_uri())
    assert page.locator("details.test").count() == 4
    page.fill("#q", "lisbon")
    assert page.locator("details.test:visible").count() == 1 and page.inner_text("#shown") == "1 of 4 tests"
    page.fill("#q", "")
    page.select_option("#f-verdict", "fail")  # the agent run and `broken`
    assert page.locator("details.test:visible").count() == 2 and page.inner_text("#shown") == "2 of 4 tests"
    page.select_option("#f-verdict", "")
    page.select_option("#f-target", "agent-cli")
    test = page.locator("details.test:visible")
    assert test.count() == 1
    test.locator("summary").first.click()
    tool = test.locator("details.tool-call").first
    assert not tool.locator("pre").first.is_visible()
    tool.locator("summary").click()
    assert "TP123" in tool.inner_text() and tool.locator("pre").first.is_visible()
    assert page.locator(".msg.src-simulator .bubble").first.inner_text() == "Book me a flight to Lisbon"
    shot(page, "report-agent")
    page.select_option("#f-target", "")
    page.click("#test-0 > summary")
    assert page.get_by_text(SCRIPT_REPLY).count() == 1  # shown as text
    assert page.evaluate("window.PWNED") is None  # and never run
    assert page.locator(".bubble script").count() == 0
    shot(page, "report-travel")


def test_a_link_to_a_test_opens_it_and_any_other_hash_breaks_nothing(page, runs: Runs) -> None:
    """`querySelector(location.hash)` threw on a hash that is no selector (`#1`, `#%3Cimg%3E`),
    which stopped the script before it wired the rater and the label forms."""
    report = (runs.root / "report.html").as_uri()
    page.goto(report + "#test-1")
    assert [t.get_attribute("id") for t in page.locator("details.test[open]").all()] == ["test-1"]
    for hash_ in ("#%3Cimg%20src=x%20onerror=window.PWNED=1%3E", "#1", "#%zz"):
        page.goto("about:blank")
        page.goto(report + hash_)
        assert page.locator("details.test[open]").count() == 0 and page.js_errors == [], hash_
    assert page.evaluate("window.PWNED") is None


def test_viewer_runs_compare_and_labels(page, runs: Runs) -> None:
    first, second = runs.first, runs.second
    with Viewer(runs.root / ".convoeval" / "runs.sqlite", port=0) as viewer:
        page.goto(viewer.login_url)  # sets the viewer's cookie: the pages below go without the token
        assert page.locator("#runs tbody tr").count() == 2
        shot(page, "viewer-runs")
        page.select_option("select[name=a]", first)
        page.select_option("select[name=b]", second)
        page.click(".compare-form button")
        page.wait_for_url("**/compare?**")
        rows = page.locator("#comparison tbody tr")
        assert rows.count() == 3 and rows.first.get_attribute("data-outcome") == "loss"
        assert "greeting" in rows.first.inner_text()
        greeting = page.locator("details.pair[data-test='greeting']")  # both conversations side by side
        assert greeting.get_attribute("open") is not None and greeting.locator(".cmp-row.changed").count() == 1
        assert greeting.locator(".cmp-row.diverge").get_attribute("data-turn") == "1"
        shot(page, "viewer-compare")
        rows.first.locator("a").click()  # the regression, opened in the new run
        page.wait_for_url(f"**/run/{second}?q=greeting")
        opened = page.locator("details.test[open]")
        assert opened.count() == 1 and opened.get_attribute("data-verdict") == "fail"
        page.goto(f"{viewer.url}run/{second}")
        page.fill("#rater", "ana")
        page.dispatch_event("#rater", "change")
        page.click("#test-0 > summary")
        forms = page.locator("#test-0 form.label-form")
        assert forms.count() == 2
        for index, value in enumerate(("4", "2")):
            form = forms.nth(index)
            form.locator("select").select_option(value)
            form.locator("input[name=comment]").fill(f"comment {index} <b>bold</b>")
            form.locator("button").click()
            sync_api.expect(form.locator(".saved")).to_have_text("saved")
        shot(page, "viewer-labels")
        with page.expect_download() as download:
            page.click("#export")
        text = Path(download.value.path()).read_text()
    assert text.splitlines() == [
        "item,ana,judge",
        "travel/japan-trip @ openai:m turn-1 rubrics,4,5",
        "travel/japan-trip @ openai:m conversation rubrics,2,5",
    ]
