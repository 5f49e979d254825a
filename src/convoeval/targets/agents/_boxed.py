"""Agent CLIs inside the workspace's sandbox.

A conversation with a workspace, under the `bubblewrap` sandbox (the default where `bwrap` is
installed), runs each turn of `claude-code` / `codex` in bubblewrap (`agent_bwrap_argv`): the
workspace is its working directory and the only writable host folder; the system, the CLI's
install and the programs on PATH are read-only; the temp folders, `/run` and the user's home are
empty; the host's network is shared (the CLI must reach its model server, so the commands it
runs can reach the network too); HOME is a private folder of the conversation, kept across its
turns (the CLI's session files live there, so every turn resumes) and removed when the
conversation ends, after its session files are copied to `keep_sessions` when the target says so.
The environment holds only what the CLI needs (PATH, the locale, the provider's endpoint
settings), the one provider key the target names, and what the target passes by name.

As root, bubblewrap starts as an unprivileged user (`nobody`, or `CONVOEVAL_AGENT_USER`): the
HOME is given to it, the workspace lent to it for each turn and given back after (`AgentCli`),
and the CLI started by its real path. Where bubblewrap cannot start as that user, the turn is
an error saying what to do; it never runs with root's powers instead.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ... import _sandbox as sandbox
from ..._jsonl import bounded_lines
from ..._result_files import replacing
from ..._sandbox import (
    AGENT_HOME,
    AGENT_USER_ENV,
    AgentUser,
    PidsGroup,
    SandboxError,
    agent_bwrap_argv,
    agent_pids_group,
    agent_user,
    in_agent_child,
    start_problem,
    trial_settings,
)
from ..._secrets import redact
from .._base import TargetConfig, TargetError
from ._process import target_key
from ._settings import AgentCliSettings

#: Variables an agent CLI gets from the parent inside its sandbox (when set), besides its own.
BOXED_ENV = ("PATH", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ")
#: Session files of the CLIs, under their HOME: Claude Code's, then Codex's rollouts.
SESSION_FILES = (".claude/projects/*/*.jsonl", ".codex/sessions/*/*/*/rollout-*.jsonl")


@dataclass
class Launch:
    """How to start one turn of the CLI: its argv and environment, the environment its reply is
    read with (host paths: where its HOME really is), the secrets to redact, and the HOME of the
    conversation and its pids cgroup (where one holds `processes`: remove it after the turn)
    when it runs in the sandbox; as root, the unprivileged user the workspace is lent to for
    the turn (`sandbox.lend`)."""

    argv: list[str]
    env: dict[str, str]
    reply_env: dict[str, str]
    secrets: list[str]
    preexec: Callable[[], None] | None = None
    home: Path | None = None
    pids: PidsGroup | None = None
    user: AgentUser | None = None


def sandboxed(name: str) -> bool:
    """Whether a turn with a workspace runs in the sandbox: yes under `bubblewrap`, no under
    `none` (chosen by name).

    Raises:
        TargetError: no sandbox can run it (bubblewrap missing: how to install it or opt out),
            or the `docker` sandbox, which does not run agent CLIs.
    """
    try:
        which = sandbox.backend()
    except SandboxError as exc:
        raise TargetError(f"{name}: the agent CLI runs in the workspace's sandbox, but {exc}") from None
    if which == "docker":
        raise TargetError(
            f"{name}: agent CLIs do not run in the docker sandbox (their install is not in its image): "
            "choose `--sandbox bubblewrap`, or `--sandbox none` to run them unconfined on this machine"
        )
    return which == "bubblewrap"


def boxed_env(
    config: TargetConfig, settings: AgentCliSettings, key_names: Sequence[str], config_names: Iterable[str]
) -> tuple[dict[str, str], list[str]]:
    """The CLI's environment inside the sandbox, and the secret in it (to redact).

    It holds one key: the one the target gives (`api_key` / `api_key_env`, as the provider's
    key variable: `target_key`), else the first of the provider's `key_names` that is set;
    `config_names` are the provider's non-secret settings (its base URL); `env_passthrough`
    names and `env` values are the target's own choice. HOME and TMPDIR are the sandbox's.

    Raises:
        TargetError: the target names a key that is not there.
    """
    given = target_key(config, key_names)
    key = None if given is not None else next((n for n in key_names if os.environ.get(n)), None)
    names = [*BOXED_ENV, *config_names, *settings.env_passthrough, *([key] if key else [])]
    env = {name: os.environ[name] for name in names if name in os.environ}
    if given is not None:
        env.update(dict.fromkeys(given[0], given[1]))
    env.update(settings.env)
    env.update(HOME=AGENT_HOME, TMPDIR="/tmp")
    secret = given[1] if given is not None else (os.environ.get(key) if key else None)
    return env, [secret] if secret else []


def install_dirs(executable: str, path: str | None) -> list[Path]:
    """The folders the CLI needs to run: the `node_modules` that holds it (its platform
    package too), else the folder of the program, for both the path given and its target.

    Raises:
        FileNotFoundError: the program is not on PATH.
    """
    found = shutil.which(executable, path=path)
    if found is None:
        raise FileNotFoundError(executable)
    dirs = []
    for program in dict.fromkeys((Path(os.path.abspath(found)), Path(found).resolve())):
        holder = next((p for p in program.parents if p.name == "node_modules"), program.parent)
        dirs.append(holder)
    return dirs


class AgentHomes:
    """The private HOME of each sandboxed conversation of one target, by its session id."""

    def __init__(self, keep: Path | None):
        """`keep`: the `keep_sessions` folder, its links resolved now, before any hook runs."""
        self.keep = Path(os.path.realpath(keep)) if keep is not None else None
        self._homes: dict[str, Path] = {}

    def home(self, workdir: str, session_id: str | None) -> Path:
        """The session's HOME, or a new one beside the workspace in the temp folder (named after
        it, so the sweep of a killed run's workspaces takes it too)."""
        if session_id is not None and session_id in self._homes:
            return self._homes[session_id]
        return Path(tempfile.mkdtemp(prefix=f"{Path(workdir).name}-agent-home-"))

    def settle(self, home: Path, session_id: str | None) -> None:
        """After a turn: the home belongs to the session it started or resumed; a turn that
        started none leaves nothing to resume, and its home goes."""
        if session_id is None:
            if home not in self._homes.values():
                sandbox.remove_tree(home)
            return
        self._homes[session_id] = home

    def end(self, session_id: str) -> None:
        """The conversation is over: its session files are copied to `keep`, its home removed."""
        home = self._homes.pop(session_id, None)
        if home is None:
            return
        try:
            if self.keep is not None:
                for pattern in SESSION_FILES:
                    for found in home.glob(pattern):
                        if _plain_file_in(found, home):
                            _copy_redacted(found, self.keep / found.name)
        finally:
            sandbox.remove_tree(home)

    def close(self) -> None:
        for session_id in list(self._homes):
            self.end(session_id)


#: What of a session file `keep_sessions` copies: lines up to `MAX_SESSION_LINE` bytes, and up
#: to `MAX_SESSION_BYTES` in all. The agent's commands can write its HOME: a file of 1 GB read
#: whole took 5 GB of the host's memory.
MAX_SESSION_LINE = 16 * 2**20
MAX_SESSION_BYTES = 256 * 2**20


def _copy_redacted(source: Path, target: Path) -> None:
    """A session file copied with its secrets redacted (`_secrets.redact`): it holds what the
    agent's commands printed, its own key too when one ran `env`. It is read line by line (JSON
    lines: a secret never spans two); a longer line than `MAX_SESSION_LINE` is left out, and
    the copy ends at `MAX_SESSION_BYTES`, each with a line that says so. It is placed as a results
    file is (`replacing`: a link a hook left at its name or on its way is never followed), with
    the source's times but not its mode: a set-user-ID bit the agent set (as `nobody`, when
    convoeval is root) would make root's copy a root program."""
    with source.open("rb") as lines, replacing(target, "wb") as out:
        for line in bounded_lines(lines, MAX_SESSION_LINE, MAX_SESSION_BYTES):
            if line is None:
                line = b'{"convoeval": "a line over %d MB left out"}\n' % (MAX_SESSION_LINE >> 20)
            out.write(redact(line.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape"))
        if lines.read(1):
            out.write(b'{"convoeval": "cut at %d MB"}\n' % (MAX_SESSION_BYTES >> 20))
        out.flush()
        times = os.stat(lines.fileno())
        os.utime(out.fileno(), ns=(times.st_atime_ns, times.st_mtime_ns))


def _plain_file_in(path: Path, home: Path) -> bool:
    """Whether `path` is a regular file inside `home`, reached without a link: the CLI wrote
    HOME (as another user, when convoeval is root), and a link it left there must not make
    convoeval copy a file of the host's."""
    try:
        return path.is_file() and not path.is_symlink() and path.resolve().is_relative_to(home.resolve())
    except OSError:
        return False


def launch(
    config: TargetConfig,
    settings: AgentCliSettings,
    homes: AgentHomes,
    argv: list[str],
    workdir: str,
    session_id: str | None,
    names: tuple[Sequence[str], Iterable[str]],
) -> Launch:
    """One turn of the CLI in bubblewrap, in `workdir`, with the session's HOME; `names` are
    the provider's key variables and its non-secret settings."""
    env, secrets = boxed_env(config, settings, *names)
    user = _unprivileged(config.name)
    try:
        readable = install_dirs(argv[0], env.get("PATH"))
    except FileNotFoundError:
        raise TargetError(
            f"{config.name}: command not found: {argv[0]!r} (install it or set `executable` in the targets file)"
        ) from None
    home = homes.home(workdir, session_id)
    if user is not None:  # the CLI by its real path: the links to it may lie where `user` cannot go
        argv = [os.path.realpath(shutil.which(argv[0], path=env.get("PATH")) or argv[0]), *argv[1:]]
        env.update(USER=user.name, LOGNAME=user.name)
        os.chown(home, user.uid, user.gid)
    limits = trial_settings()
    box = agent_bwrap_argv(argv, Path(workdir), home, readable, user, limits)
    pids = agent_pids_group(limits)
    return Launch(
        argv=box.argv,
        env=env,
        reply_env={**{k: v for k, v in env.items() if k != "CODEX_HOME"}, "HOME": str(home)},
        secrets=secrets,
        preexec=lambda: in_agent_child(limits, pids, box),
        home=home,
        pids=pids,
        user=user,
    )


def _unprivileged(name: str) -> AgentUser | None:
    """The user the CLI's sandbox starts as when convoeval is root (None: not root).

    Raises:
        TargetError: `CONVOEVAL_AGENT_USER` is wrong, or bubblewrap cannot start as that user
            here: the CLI never runs with root's powers instead.
    """
    try:
        user = agent_user()
    except SandboxError as exc:
        raise TargetError(f"{name}: {exc}") from None
    bwrap = shutil.which("bwrap")
    if user is None or bwrap is None:
        return user
    problem = start_problem(bwrap, user)
    if problem:
        raise TargetError(
            f"{name}: as root, the agent CLI's sandbox starts as the unprivileged user {user.name} "
            f"(uid {user.uid}) so that nothing in it keeps root's powers, but bubblewrap cannot start "
            f"as that user here ({problem}): enable unprivileged user namespaces (sysctl "
            "user.max_user_namespaces above 0; kernel.unprivileged_userns_clone=1 on older Debian; "
            "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu), or name another user in "
            f"{AGENT_USER_ENV}, or choose `--sandbox none` to run the CLI unconfined"
        )
    return user
