#!/usr/bin/env bash
# Install the real agent CLIs the tests drive (Claude Code, Codex), pinned, into .tools/agent-clis/
# (git-ignored). Both npm packages ship their native binary as a platform package.
# Usage: tools/install-agent-clis.sh    (does nothing when the pinned versions are already there)
set -euo pipefail
cd "$(dirname "$0")/.."
CLAUDE_CODE_VERSION=2.1.332
CODEX_VERSION=0.171.0
PREFIX=.tools/agent-clis
STAMP="$PREFIX/.installed-claude-$CLAUDE_CODE_VERSION-codex-$CODEX_VERSION"
if [ -f "$STAMP" ]; then
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "npm is missing: install Node.js and npm (Debian: apt-get install nodejs npm)" >&2
    exit 1
fi
rm -rf "$PREFIX"
mkdir -p "$PREFIX"
npm install --prefix "$PREFIX" --no-audit --no-fund --no-save --loglevel=error \
    "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@openai/codex@$CODEX_VERSION"
"$PREFIX/node_modules/.bin/claude" --version
"$PREFIX/node_modules/.bin/codex" --version
touch "$STAMP"
