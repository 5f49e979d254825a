"""The sandbox every command a model or a suite controls runs in: the tool agent's `bash` and
command tools, `verify`, workspace hooks and code-graders in a workspace.

Backends, chosen for the whole run (`--sandbox`, `RunOptions.sandbox`, `CONVOEVAL_SANDBOX`):

- `bubblewrap` (the default where `bwrap` is installed): new user, PID, network, IPC and UTS
  namespaces (`--unshare-all`; `--share-net` only with `network: true`); the whole system
  mounted read-only (a model's commands: only the system's folders, `system_only`), root-only
  files of `/etc` covered, a private `/tmp`, `/run` and home, the workspace the only writable
  host folder, what holds keys or answers covered wherever it lies (`hide_from_models`);
  a fresh `HOME` in the private `/tmp`; `--die-with-parent` and the PID namespace, so every
  process a command starts dies with it; the parent's `/proc` out of sight.
- `docker` (a reachable daemon): the same rules with `docker run --rm --read-only
  --network none`, the workspace mounted at its own path, in `sandbox.image`.
- `none` (only when chosen by name): the command runs on the host with the clean environment
  and the limits below; its process group is killed when it ends, times out or is cancelled,
  but a process that leaves the group (`setsid`) survives, and nothing else is confined.

Agent CLIs (`claude-code`, `codex`) in a conversation with a workspace run in bubblewrap too
(`agent_bwrap_argv`): the same confinement, but with the host's network (they must reach their
model), the user's home hidden, a private HOME of the conversation at `AGENT_HOME`, their
install readable, and every limit but RLIMIT_NPROC (`in_agent_child`). As root, their
bubblewrap starts as an unprivileged user (`_agent_user`: `nobody`, or `CONVOEVAL_AGENT_USER`),
the workspace lent to that user for each turn (`_lend`), what it could not reach opened up
for it (`_reach`), so nothing inside keeps root's powers.

Every backend passes only the variables a suite names (plus PATH and the locale), applies the
`sandbox:` limits (address space, processes, file size, CPU seconds) with `setrlimit`, reads
output as it arrives and keeps at most `cap` bytes, and on timeout or cancellation kills the
command's whole process tree without waiting for its pipes. Where the kernel ignores
RLIMIT_NPROC (root), `processes` is a pids cgroup per command instead (`_cgroup`), and agent
CLIs get one too (`processes` plus `AGENT_TASKS` for their own threads); where none can be made,
`process_limit()` says so and the run header warns.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from .._unseen import hidden_from_models, hide_from_models
from ._agent_user import AGENT_USER_ENV, AgentUser, agent_user, start_problem
from ._argv import (
    AGENT_HOME,
    SANDBOX_HOME,
    AgentBox,
    agent_bwrap_argv,
    bwrap_argv,
    docker_argv,
)
from ._cgroup import AGENT_TASKS, PidsGroup, ProcessLimit, process_limit, sweep_stale_cgroups
from ._choice import (
    BACKENDS,
    BASE_ENV,
    DEFAULT_SETTINGS,
    INSTALL_HINT,
    Backend,
    SandboxError,
    SandboxSettings,
    backend,
    choose,
    chosen,
    command_env,
    describe,
    reset_trial_settings,
    trial_settings,
    use_trial_settings,
)
from ._kept import links_put_back, placeholders, sweep_placeholders
from ._lend import Lent, lend
from ._owner import left_by_gone_owner, owner_tag, stat_fields
from ._process import (
    Finished,
    agent_pids_group,
    end_all_now,
    forget_group,
    in_agent_child,
    kill_children,
    scratch_folder,
    spawn,
    watch_group,
)
from ._relay import RELAY_NOT_FOUND, Relay
from ._seccomp import filter_fd
from ._tree import remove_tree

__all__ = [
    "AGENT_HOME",
    "AGENT_TASKS",
    "AGENT_USER_ENV",
    "BACKENDS",
    "BASE_ENV",
    "DEFAULT_SETTINGS",
    "INSTALL_HINT",
    "SANDBOX_HOME",
    "AgentBox",
    "AgentUser",
    "Backend",
    "Finished",
    "Lent",
    "PidsGroup",
    "RELAY_NOT_FOUND",
    "Relay",
    "ProcessLimit",
    "SandboxError",
    "SandboxSettings",
    "agent_bwrap_argv",
    "agent_pids_group",
    "agent_user",
    "backend",
    "choose",
    "chosen",
    "command_env",
    "describe",
    "end_all_now",
    "forget_group",
    "hidden_from_models",
    "hide_from_models",
    "in_agent_child",
    "kill_children",
    "lend",
    "left_by_gone_owner",
    "owner_tag",
    "process_limit",
    "process_limit_note",
    "remove_tree",
    "reset_trial_settings",
    "run",
    "scratch_folder",
    "stat_fields",
    "start_problem",
    "sweep_placeholders",
    "sweep_stale_cgroups",
    "trial_settings",
    "use_trial_settings",
    "watch_group",
]


def process_limit_note() -> str | None:
    """What the run header says when the run's commands would not be held to `processes` here
    (root without a pids cgroup); None when the limit holds (docker applies its own)."""
    if describe() not in ("bubblewrap", "none"):
        return None
    limit = process_limit()
    return None if limit.enforced else f"sandbox: `processes` is {limit.how}"


async def run(
    command: str | Sequence[str],
    cwd: Path,
    *,
    timeout_s: float,
    writable: Path | None = None,
    readable: Sequence[Path] = (),
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    cap: int = 1_000_000,
    separate_stderr: bool = False,
    settings: SandboxSettings | None = None,
    host: bool = False,
    system_only: bool = False,
    kept: Sequence[Path] = (),
    relay: Relay | None = None,
    shared: bool = False,
) -> Finished:
    """Run `command` (a shell command line, or an argv) in the run's sandbox, in `cwd`.

    Args:
        writable: the one host folder the command may change (the workspace).
        readable: host folders it must still see inside the private /tmp (the eval folder);
            the folder of a program an argv names by its absolute path is shown too.
        env: its whole environment (see `command_env`); HOME and TMPDIR are set here (with
            `none`, a HOME given in `env` is kept).
        stdin: bytes on its standard input (else /dev/null).
        cap: bytes kept of stdout (and of stderr); the rest is read and counted, never kept.
        separate_stderr: keep stderr apart (`Finished.stderr`) instead of merged into output.
        settings: network and limits (default: the current trial's `sandbox:`).
        host: run it on the host as given, without sandbox or limits (commands convoeval
            composes itself, such as `git clone`), still bounded in output and time. As root,
            this and `none` run without root's capabilities (bubblewrap drops them too).
        system_only: show it only the system's folders besides `readable` and the workspace
            (a model's commands: bubblewrap; docker shows only its image anyway).
        kept: paths inside `writable` it may not change nor make (bubblewrap: an eval folder's
            `.git`, its eval files); an absent one is an empty read-only folder meanwhile
            (`placeholders`); a link is kept where it leads, and put back if the command
            removed or replaced it (`links_put_back`: the command then fails, saying so).
        relay: a host Unix socket the command reaches at a loopback URL (`_relay`): the command
            runs under the relay, the socket's folder bound into bubblewrap; docker refuses it.
        shared: `writable` is a folder other users reach (the eval folder, not a workspace):
            bubblewrap's filter also keeps the command from opening anything in it to them
            (`_seccomp`).

    Raises:
        SandboxError: no sandbox can run it (the message says how to install one or opt out).
        OSError: the program could not start (`none` backend with an argv).
    """
    if host:  # a command convoeval composes itself (git, docker): on the host, as given
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        if relay is not None:
            argv = relay.argv(argv, inside=False)
        return await spawn(argv, cwd, dict(env or {}), stdin, cap, separate_stderr, timeout_s, None, None, True)
    settings = settings or trial_settings()
    which = backend()
    argv = [command] if isinstance(command, str) else list(command)
    shell = isinstance(command, str)
    if not shell and not system_only and argv and os.path.isabs(argv[0]):  # a program named by its path:
        program = Path(argv[0])  # shown, even in a temp folder or a home (its folder, and its link's target's)
        readable = [*readable, program.parent, program.resolve().parent]
    if relay is not None:
        if which == "docker":
            raise SandboxError(
                "the target proxy (a code-grader's `target:`) is not available in the docker sandbox: "
                "use bubblewrap or `--sandbox none`"
            )
        argv = relay.argv(["/bin/sh", "-c", argv[0]] if shell else argv, inside=which == "bubblewrap")
        shell = False
    if which != "none":
        home, inside = None, {"HOME": SANDBOX_HOME, "TMPDIR": "/tmp"}
    elif env is not None and "HOME" in env:  # unconfined, a suite's command keeps the HOME it was given
        home, inside = None, {}
    else:  # unconfined, a model's command still gets a HOME of its own
        home = Path(tempfile.mkdtemp(prefix="convoeval-home-"))
        inside = {"HOME": str(home), "TMPDIR": tempfile.gettempdir()}
    full_env = {**(env or {}), **inside}
    name = None
    bound: list[str] = []
    loader: list[str] = []  # LD_* for the command only: bwrap itself runs on the host, as convoeval's user
    if which == "bubblewrap":
        bound = relay.bind() if relay is not None else []
        loader = [part for k, v in full_env.items() if k.startswith("LD_") for part in ("--setenv", k, v)]
        full_env = {k: v for k, v in full_env.items() if not k.startswith("LD_")}
    elif which == "docker":  # nor to the docker client, which runs on the host (nor then to the container)
        full_env = {k: v for k, v in full_env.items() if not k.startswith("LD_")}
        name = f"convoeval-{uuid.uuid4().hex[:12]}"
        argv = await docker_argv(argv, shell, cwd, writable, full_env, settings, name)
    elif shell:
        argv = ["/bin/sh", "-c", argv[0]]
    if which == "docker":  # the docker client itself may need DOCKER_HOST and the like
        full_env = {**{k: v for k, v in os.environ.items() if k.startswith("DOCKER_")}, **full_env}
    kept = kept if which == "bubblewrap" and writable is not None else ()
    seccomp = filter_fd(shared) if which == "bubblewrap" else None
    try:
        with links_put_back(kept, writable or cwd) as put_back, placeholders(kept, writable or cwd):
            if which == "bubblewrap":
                argv = bwrap_argv(
                    argv, shell, cwd, writable, readable, settings, system_only=system_only, kept=kept, bound=bound
                )
                argv[1:1] = [*loader, *(["--seccomp", str(seccomp)] if seccomp is not None else [])]
            finished = await spawn(
                argv,
                cwd,
                full_env,
                stdin,
                cap,
                separate_stderr,
                timeout_s,
                settings,
                name,
                which != "bubblewrap",
                keep_fds=() if seccomp is None else (seccomp,),
            )
        if put_back:  # the command did what it may not: it fails, saying so
            told = "".join(f"\nconvoeval: {line}" for line in put_back)
            finished = dataclasses.replace(finished, code=finished.code or 1, output=finished.output + told)
        return finished
    finally:
        if seccomp is not None:
            os.close(seccomp)
        if home is not None:
            remove_tree(home)
