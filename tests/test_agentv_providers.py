"""AgentV's provider definitions as its newest tag and main branch write them (read from
`providers/targets.ts` `normalizeTargetDefinition` / `normalizeProviderDefinition` and
`providers/mock.ts`): a `config:` block, `runtime: host`, and the `mock` provider."""

from __future__ import annotations

import json
from pathlib import Path

from convoeval.testing import FakeOpenAIServer

from .conftest import write

#: main's README quickstart (and examples/features/readme-quickstart/.agentv/providers.yaml).
CATALOG = """\
providers:
  - id: openai
    label: local-openai
    runtime: host
    config:
      api_format: chat
      base_url: "{{ env.LOCAL_BASE }}"
      api_key: "{{ env.LOCAL_KEY }}"
      model: gpt-5.4-mini
  - id: mock
    label: canned
    response: Hello from the mock target
  - id: mock
    label: bare
  - id: codex-cli
    label: boxed
    runtime: {mode: sandbox}
"""
SUITE = """\
providers: [local-openai]
prompts:
  - "{{ input }}"
tests:
  - id: t1
    vars:
      input: Say hello
    assert:
      - type: contains
        value: Hello
"""


def _run(cli, tmp_path: Path, *args: str) -> tuple[int, str, list[dict]]:
    out = tmp_path / "r.jsonl"
    out.unlink(missing_ok=True)
    code, stdout, stderr = cli("run", tmp_path / "evals" / "s.eval.yaml", "--no-cache", "-o", out, *args)
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return code, stdout + stderr, rows


def test_config_block_runtime_host_and_mock(cli, fake_openai: FakeOpenAIServer, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LOCAL_BASE", fake_openai.base_url)
    monkeypatch.setenv("LOCAL_KEY", "sk-local-SECRET-1234")
    write(tmp_path / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(tmp_path / ".agentv" / "providers.yaml", CATALOG)
    write(tmp_path / "evals" / "s.eval.yaml", SUITE)
    code, output, rows = _run(cli, tmp_path)  # `config:` read: its base_url, key and model
    assert rows and rows[0]["execution_status"] != "execution_error", output
    assert fake_openai.target_requests()[-1]["model"] == "gpt-5.4-mini"
    for target, reply in [
        ("canned", "Hello from the mock target"),
        ("bare", '{"answer":"Mock provider response. Configure targets.yaml to supply a custom value."}'),
    ]:
        code, output, rows = _run(cli, tmp_path, "--target", target)
        assert rows[0]["output"][-1]["content"] == reply, output
    code, output, rows = _run(cli, tmp_path, "--target", "boxed")
    assert code == 2 and not rows and "providers.yaml:17: providers[3].runtime:" in output, output


def test_main_defaults_pick_the_provider_and_the_grader(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, monkeypatch
) -> None:
    """AgentV main (orchestrator.ts `graderTarget ?? defaultGraderTarget`, config-graph.ts): the
    project config's `defaults: file://defaults.yaml` (readme-quickstart) or the providers file's
    own `defaults:` (`agentv init`'s template) name the provider a suite without `providers` runs
    on and the grader of its llm checks; the target no longer grades itself."""
    monkeypatch.setenv("LOCAL_BASE", fake_openai.base_url)
    monkeypatch.setenv("LOCAL_KEY", "sk-local-SECRET-1234")
    write(tmp_path / ".git" / "HEAD", "ref: refs/heads/main\n")
    entry = '  - id: openai\n    label: {0}\n    config: {{base_url: "{{{{ env.LOCAL_BASE }}}}", model: {0}-model}}\n'
    providers = "providers:\n" + entry.format("sut") + entry.format("judge")
    write(tmp_path / "evals" / "s.eval.yaml", SUITE.replace("providers: [local-openai]\n", "").replace("- type: contains\n        value: Hello", "- Says hello"))  # fmt: skip
    for layout in ("config", "catalog"):
        write(tmp_path / ".agentv" / "providers.yaml", providers + ("defaults: {provider: sut, grader: judge}\n" if layout == "catalog" else ""))  # fmt: skip
        if layout == "config":
            write(
                tmp_path / ".agentv" / "config.yaml",
                "providers: file://providers.yaml\ndefaults: file://defaults.yaml\n",
            )
            write(tmp_path / ".agentv" / "defaults.yaml", "provider: sut\ngrader: judge\n")
        else:
            (tmp_path / ".agentv" / "config.yaml").unlink()
        fake_openai.reset()
        code, output, rows = _run(cli, tmp_path)
        assert rows and rows[0]["target"] == "sut" and "judge: judge (defaults.grader of" in output, output
        assert {r["model"] for r in fake_openai.target_requests()} == {"sut-model"}
        assert {r["model"] for r in fake_openai.judge_requests()} == {"judge-model"}, layout
    # v5.3.1's `{target, grader}` (readme-quickstart at the tag): its config-graph.ts checks them, its
    # runs do not use them: the target grades itself there.
    write(tmp_path / ".agentv" / "providers.yaml", providers)
    write(tmp_path / ".agentv" / "config.yaml", "defaults: {target: sut, grader: judge}\n")
    fake_openai.reset()
    code, output, rows = _run(cli, tmp_path, "--target", "sut")
    assert {r["model"] for r in fake_openai.judge_requests()} == {"sut-model"}, output
    (tmp_path / ".agentv" / "config.yaml").unlink()
    # The eval file's own `defaults:` (yaml-parser.ts readSuiteDefaults) wins over the project's.
    write(tmp_path / ".agentv" / "providers.yaml", providers + entry.format("other") + "defaults: {grader: other}\n")
    suite = tmp_path / "evals" / "s.eval.yaml"
    suite.write_text("defaults:\n  provider: sut\n  grader: judge\n" + suite.read_text())
    fake_openai.reset()
    code, output, rows = _run(cli, tmp_path)
    assert rows and rows[0]["target"] == "sut", output
    assert {r["model"] for r in fake_openai.judge_requests()} == {"judge-model"}


INLINE = """\
description: Code generation quality with eval-local provider settings
providers:
  - id: openai
    label: local-mini
    runtime: host
    config:
      api_format: chat
      base_url: "{{ env.LOCAL_BASE }}"
      api_key: "{{ env.LOCAL_KEY }}"
      model: gpt-5.4-mini
defaults:
  grader: project-grader
prompts:
  - "{{ input }}"
tests:
  - id: t1
    vars:
      input: Say hello
    assert:
      - Says hello
"""


def test_providers_declared_in_the_eval_file(cli, fake_openai: FakeOpenAIServer, tmp_path: Path, monkeypatch) -> None:
    """AgentV main's eval-local providers (its README; config-loader.ts parseInlineProviderRefs):
    targets of that suite, read as a providers file's entries (their keys from the environment,
    never written to the results); the grader is the project's."""
    monkeypatch.setenv("LOCAL_BASE", fake_openai.base_url)
    monkeypatch.setenv("LOCAL_KEY", "sk-inline-SECRET-9876")
    write(tmp_path / ".git" / "HEAD", "ref: refs/heads/main\n")
    grader = '  - id: openai\n    label: project-grader\n    config: {base_url: "{{ env.LOCAL_BASE }}", model: grader-mini}\n'
    write(tmp_path / ".agentv" / "providers.yaml", "providers:\n" + grader)
    suite = write(tmp_path / "evals" / "s.eval.yaml", INLINE)
    assert cli("validate", suite)[0] == 0
    code, output, rows = _run(cli, tmp_path)
    assert rows and rows[0]["target"] == "local-mini" and rows[0]["verdict"] == "pass", output
    assert {r["model"] for r in fake_openai.target_requests()} == {"gpt-5.4-mini"}
    assert {r["model"] for r in fake_openai.judge_requests()} == {"grader-mini"}
    assert "SECRET-9876" not in (tmp_path / "r.jsonl").read_text()
    monkeypatch.delenv("LOCAL_KEY")  # unset: an error naming the line, when the run uses it
    code, output, rows = _run(cli, tmp_path)
    assert code == 2 and "s.eval.yaml:9: providers[0].api_key: environment variable LOCAL_KEY is not set" in output


DOCS = Path(__file__).parent / "data" / "agentv-docs"


def test_the_tags_targets_declared_in_the_eval_file(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """AgentV v5.3.1's top-level `targets` (config-loader.ts `parseEvalTargetRef`; main renamed it
    `providers`): its own documentation's prompt matrix, in an AgentV project. Each definition is
    a target of the suite named by its `id`, written as in a targets file; a run uses only those it
    names, and a provider convoeval lacks is an error at its line when used."""
    write(tmp_path / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(tmp_path / ".agentv" / "config.yaml", "execution:\n  verbose: false\n")
    suite = write(tmp_path / "evals" / "s.eval.yaml", (DOCS / "targets.eval.yaml").read_text())
    assert cli("validate", suite)[0] == 0
    code, output, rows = _run(cli, tmp_path, "--target", "local-mini")
    assert sorted(r["test_id"] for r in rows) == sorted(
        f"{t}__prompt_{p}" for t in ("release-notes", "roadmap") for p in ("direct", "terse")
    ), output
    assert {r["target"] for r in rows} == {"local-mini"}
    assert {r["model"] for r in fake_openai.target_requests()} == {"gpt-5.4-mini"}
    code, output, rows = _run(cli, tmp_path)  # both: local-codex's provider is not convoeval's
    assert code == 2 and not rows and "s.eval.yaml:27: targets[1].provider: provider 'codex-app-server'" in output
    write(suite, "targets:\n  - id: a\n    provider: openai\n    hooks: {before_each: {command: [x]}}\n  - name: b\n  - 7\n"
          "tests:\n  - id: t\n    input: hi\n    criteria: greets\n")  # fmt: skip
    code, out, err = cli("validate", suite)
    output = out + err
    assert code == 2 and "s.eval.yaml:4: targets[0].hooks: this AgentV form is not supported" in output, output
    assert "s.eval.yaml:5: targets[1].name: target field 'name' has been removed" in output
    assert "s.eval.yaml:6: targets[2]: use a target name or a target object" in output


def test_the_tags_graders_and_defaults_in_an_eval_file_are_ignored(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, caplog
) -> None:
    """v5.3.1's running-evals.mdx graph written in an eval file: its validator knows `graders` and
    `defaults`, and nothing of that tag reads them from an eval file (no `graders` in yaml-parser.ts
    or apps/cli; main refuses both, "defaults.target has been removed"): ignored with a warning, so
    the target grades itself, as in AgentV, and `defaults.grader` names no judge."""
    write(tmp_path / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(tmp_path / ".agentv" / "config.yaml", "execution:\n  verbose: false\n")
    text = (DOCS / "graph.eval.yaml").read_text()  # its test, which checks nothing (AgentV skips it), checks a greeting
    text = text.replace("input: Fix the failing test\n", "input: Say hi\n    assert: [Says hi]\n")
    suite = write(tmp_path / "evals" / "s.eval.yaml", text)
    assert cli("validate", suite)[0] == 0
    assert "s.eval.yaml:9: graders: ignored, as AgentV v5.3.1 ignores it" in caplog.text
    assert "s.eval.yaml:24: defaults: ignored, as AgentV ignores it" in caplog.text
    code, output, rows = _run(cli, tmp_path, "--target", "openai:gpt-4o-mini")
    assert rows and rows[0]["verdict"] == "pass", output
    assert {r["model"] for r in fake_openai.judge_requests()} == {"gpt-4o-mini"}


def test_the_tags_target_written_in_the_eval_file(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, monkeypatch
) -> None:
    """AgentV v5.3.1's README quickstart (yaml-parser.ts `parseEvalTargetSpec`): a top-level
    `target` mapping is the suite's own target, named by its `id`; `extends` is refused."""
    monkeypatch.setenv("LOCAL_OPENAI_PROXY_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("LOCAL_OPENAI_PROXY_API_KEY", "sk-readme-SECRET-4321")
    write(tmp_path / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(tmp_path / ".agentv" / "config.yaml", "execution:\n  verbose: false\n")
    suite = write(tmp_path / "evals" / "s.eval.yaml", (DOCS / "readme-target.eval.yaml").read_text())
    code, output, rows = _run(cli, tmp_path)
    assert [(r["target"], len(r["trials"]), r["threshold"]) for r in rows] == [("local-mini", 2, 0.85)], output
    assert {r["model"] for r in fake_openai.target_requests()} == {"gpt-5.4-mini"}
    assert "SECRET-4321" not in (tmp_path / "r.jsonl").read_text()
    write(suite, suite.read_text().replace("  id: local-mini\n", "  extends: local-mini\n"))
    code, out, err = cli("validate", suite)
    assert code == 2 and "s.eval.yaml:5: target.extends: this AgentV form is not supported" in out + err, out + err
