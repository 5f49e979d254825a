"""The compare page and Markdown replies in Debian's Chromium (Playwright, as in
test_report_browser.py): two real runs side by side with the first divergence and the changed
verdict marked, hostile replies rendered as Markdown without running anything, and a long system
prompt folded."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from convoeval.cli import app
from convoeval.testing import FakeOpenAIServer

from .conftest import write

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]

POLICY = "You are the support agent of Acme Shop. " + "Follow the returns policy to the letter. " * 160
SUITE = f"""
name: shop
tests:
  - id: support
    mode: conversation
    input:
      - role: system
        content: {POLICY}
    turns:
      - input: Where is my order?
        assertions:
          - type: icontains
            value: order
      - input: Can I return it?
        assertions:
          - type: icontains
            value: 30 days
  - id: hello
    input: Say hello
    assertions:
      - type: icontains
        value: hello
"""
HOSTILE = (
    'Sure! <img src=x onerror="window.PWNED=1"> [click me](javascript:window.PWNED=2) '
    "<script>window.PWNED=3</script> ![tracker](http://203.0.113.9/t.png)\n\n- returns are **case by case**\n- see <a href='javascript:window.PWNED=4'>here</a>"
)


def replies(hostile: bool):
    def reply(body: dict) -> str:
        last = body["messages"][-1]["content"]
        if "order" in last:
            return "Your **order** ships on *Friday*."
        if "return" in last:
            return HOSTILE if hostile else "Yes: returns are free within **30 days**."
        return "Hello!"

    return reply


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two real runs (the second answers turn 2 with hostile Markdown and fails it), the compare
    page and the HTML report of the second; made before the browser starts."""
    root = tmp_path_factory.mktemp("compare")
    write(root / "suite.eval.yaml", SUITE)
    with FakeOpenAIServer() as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_BASE_URL", server.base_url)
        patch.setenv("OPENAI_API_KEY", "sk-test-compare")
        patch.chdir(root)

        def convoeval(*args: str) -> tuple[int, str]:
            result = CliRunner().invoke(app, list(args), catch_exceptions=False)
            return result.exit_code, result.stdout + result.stderr

        run = ("run", "suite.eval.yaml", "-t", "openai:m", "-q", "--no-cache")
        server.reset(reply=replies(hostile=False))
        assert convoeval(*run, "-o", "a.jsonl")[0] == 0
        server.reset(reply=replies(hostile=True))
        assert convoeval(*run, "-o", "b.jsonl")[0] == 1
        code, out = convoeval("compare", "a.jsonl", "b.jsonl", "--html", "compare.html")
        assert code == 0 and "wrote compare.html" in out
        assert convoeval("report", "b.jsonl", "--html", "report.html")[0] == 0
    return root


@pytest.fixture(scope="module")
def browser(pages: Path) -> Iterator[object]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    outside: list[str] = []

    def guard(route) -> None:
        url = route.request.url
        if url.startswith(("file://", "data:")):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    context.route("**/*", guard)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    yield tab
    context.close()
    assert outside == [], f"requests left the file: {outside}"
    assert errors == [], f"JavaScript errors: {errors}"


def assert_nothing_ran(page) -> None:
    assert page.evaluate("window.PWNED") is None
    assert page.locator(".bubble img, .bubble script, .bubble iframe").count() == 0
    hrefs = page.eval_on_selector_all(".bubble a", "els => els.map(e => e.getAttribute('href'))")
    assert not any(h and h.strip().lower().startswith("javascript:") for h in hrefs)


def test_compare_page_puts_transcripts_side_by_side_and_marks_the_divergence(page, pages: Path) -> None:
    page.goto((pages / "compare.html").as_uri())
    pairs = page.locator("details.pair")
    assert pairs.count() == 2
    support = page.locator("details.pair[data-test='support']")
    assert support.get_attribute("open") is not None  # a regression is shown open
    summary = support.locator(":scope > summary").inner_text()
    assert "diverges at turn 2" in summary and "verdict changed: turn 2" in summary
    heads = support.locator(".cmp-head")
    assert heads.count() == 2 and "a" in heads.nth(0).inner_text() and "b" in heads.nth(1).inner_text()
    diverge = support.locator(".cmp-row.diverge")
    assert diverge.count() == 1 and diverge.get_attribute("data-turn") == "2"
    changed = support.locator(".cmp-row.changed")
    assert changed.count() == 1 and "verdict pass → fail" in changed.locator(".cmp-label").inner_text()
    turn_1 = support.locator(".cmp-row[data-turn='1'] .cmp-cell")
    assert turn_1.count() == 2  # the same first turn on both sides, unmarked
    assert turn_1.nth(0).locator(".msg.src-target strong").inner_text() == "order"
    left, right = changed.locator(".cmp-cell").nth(0), changed.locator(".cmp-cell").nth(1)
    assert "30 days" in left.locator(".msg.src-target").inner_text()
    assert "case by case" in right.locator(".msg.src-target strong").inner_text()
    # the hostile reply's HTML is shown as text, its javascript: link is not a link
    assert '<img src=x onerror="window.PWNED=1">' in right.inner_text()
    assert "[click me](javascript:window.PWNED=2)" in right.inner_text()
    assert_nothing_ran(page)
    hello = page.locator("details.pair[data-test='hello']")
    assert "diverges" not in hello.locator(":scope > summary").inner_text()
    (Path(__file__).parent / "artifacts").mkdir(exist_ok=True)
    page.screenshot(path=str(Path(__file__).parent / "artifacts" / "compare-side-by-side.png"), full_page=True)


def test_long_system_prompt_is_folded_until_asked(page, pages: Path) -> None:
    page.goto((pages / "report.html").as_uri())
    page.locator("details.test", has_text="support").locator("summary").first.click()
    fold = page.locator("details.sys-fold").first
    assert fold.get_attribute("open") is None
    assert f"({len(POLICY.strip())} characters)" in fold.locator("summary").inner_text()
    assert not fold.locator(".bubble").is_visible()
    fold.locator("summary").click()
    assert fold.locator(".bubble").is_visible() and "to the letter" in fold.locator(".bubble").inner_text()
    assert_nothing_ran(page)


def test_report_renders_hostile_markdown_safely(page, pages: Path) -> None:
    page.goto((pages / "report.html").as_uri())
    for summary in page.locator("details.test > summary").all():
        summary.click()
    bubbles = page.locator(".msg.src-target .bubble.md")
    assert bubbles.count() == 3
    assert page.locator(".msg.src-target .bubble.md li").count() == 2
    assert page.locator(".msg.src-target .bubble.md em").first.inner_text() == "Friday"
    assert_nothing_ran(page)
    # user messages stay plain text
    assert page.locator(".msg.src-user .bubble strong").count() == 0
