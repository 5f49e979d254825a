"""The command lines that put a command in a bubblewrap or docker sandbox."""

from __future__ import annotations

import asyncio
import atexit
import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._paths import enclosing_repository
from .._unseen import hidden_from_models
from ._agent_user import AgentUser, closed_folders
from ._choice import SandboxError, SandboxSettings
from ._kept import leads_to, links_on_the_way
from ._reach import Reach

#: Where the fresh HOME is, inside the sandbox's private /tmp.
SANDBOX_HOME = "/tmp/home"
#: An agent CLI's HOME inside its sandbox (a host folder kept across a conversation's turns);
#: not under /tmp, where Codex refuses to set up its own sandbox helper.
AGENT_HOME = "/run/home"


#: bubblewrap's start. No `--new-session`: convoeval starts bwrap in a session of its own with no
#: terminal (`start_new_session`), so there is no terminal to inject input into, and the sandboxed
#: child stays in bwrap's process group, which one `killpg` ends. With `--new-session` the child
#: led a group of its own, and a bwrap killed while it was starting (a Ctrl-C then) could leave
#: it running.
_BWRAP = ("bwrap", "--die-with-parent", "--unshare-all")


def _start() -> list[str]:
    """bubblewrap's start for a command; as root also `--cap-drop ALL`. bubblewrap keeps a root
    caller's capabilities inside (its uid 0 is the host's): with them a command could remount
    `/` read-write in its mount namespace and write host files, or the pids cgroups. Agent CLIs
    cannot drop them: Codex's own sandbox, a bubblewrap inside this one, cannot start without
    them (no uid map without CAP_SETFCAP, no /proc in a user namespace of its own, bubblewrap
    covers /proc/irq and /proc/bus); as root they start as an unprivileged user instead
    (`agent_bwrap_argv`)."""
    return [*_BWRAP, "--cap-drop", "ALL"] if os.geteuid() == 0 else [*_BWRAP]


def _proc() -> list[str]:
    """bubblewrap's `/proc` for a command; as root with `/proc/sys` read-only. The command's uid 0
    is the host's, and the kernel lets that uid write a sysctl with no capability at all
    (`kernel.core_pattern`: a program the host runs as root at the next crash); bubblewrap leaves
    `/proc/sys` writable. Not otherwise: a proc mount with a submount cannot be mounted again in a
    namespace of the command's own (`unshare --mount-proc`), and another uid cannot write it."""
    return ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"] if os.geteuid() == 0 else ["--proc", "/proc"]


def bwrap_argv(
    argv: list[str],
    shell: bool,
    cwd: Path,
    writable: Path | None,
    readable: Sequence[Path],
    settings: SandboxSettings,
    *,
    system_only: bool = False,
    kept: Sequence[Path] = (),
    bound: Sequence[str] = (),
) -> list[str]:
    """bubblewrap's command line: the system read-only (root-only files of `/etc` covered), the
    user's home and the temp folders hidden (private, empty), a private /run and /dev, a new PID
    namespace, no network unless allowed, the workspace bound read-write (same path) but for
    the `kept` paths in it (read-only), what holds keys or answers covered wherever it lies
    (`hide_from_models`), then the `bound` arguments (the relay's socket folder). With
    `system_only` (a model's commands), only the system's folders are shown (`SYSTEM_FOLDERS`),
    not the rest of the host: not the project. Programs on PATH and Python's own folders stay
    readable wherever they live."""
    out = _start()
    if settings.network:
        out.append("--share-net")
    size = _tmpfs_size(settings)
    out += _system_view(size) if system_only else ["--ro-bind", "/", "/", *_private_var_tmp(size)]
    out += ["--dev", "/dev", *size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]  # /dev: a tmpfs too
    out += [*_proc(), *size, "--tmpfs", "/run"]
    hidden = _hidden([h for h in _user_homes() if Path(h).resolve() != Path("/")])
    for folder in hidden:
        out += [*size, "--tmpfs", folder]
    out += ["--dir", SANDBOX_HOME, *_covered_root_files()]
    projects = _projects_in_system_folders() if system_only else []
    for project in projects:  # a project in /opt or /usr/src: not the system's (what it needs is bound below)
        out += [*size, "--tmpfs", project]
    shown = [*map(str, readable)]
    opened = _shown_programs(hidden, entries=[*shown, str(cwd)]) if not system_only else []
    opened += _shown_programs(hidden)  # a suite's command: the project around its eval folder too
    shown += opened
    if system_only:
        shown += [p for p in _program_folders() if not any(_under(p, h) for h in hidden)]
    resolv = Path("/etc/resolv.conf").resolve()  # often a link into /run (systemd-resolved)
    if settings.network and not resolv.is_relative_to("/etc"):
        shown.append(str(resolv))
    shown = list(dict.fromkeys(str(Path(p).resolve()) for p in shown))
    for path in shown:
        out += ["--ro-bind-try", path, path]
    out += _covered_private(_in_homes(opened, hidden))
    here = str(Path(cwd).resolve())
    seen = [*shown, *SYSTEM_FOLDERS] if system_only else ["/", *shown]
    needed = [here, *(str(Path(p).resolve()) for p in readable)]
    if writable is not None:
        resolved = str(Path(writable).resolve())
        out += ["--bind", resolved, resolved, *_kept_binds(kept, Path(resolved))]
        seen.append(resolved)
        needed.append(resolved)
    out += _covered_unseen(
        seen, [*hidden, "/var/tmp", *projects], needed
    )  # a suite's commands too: they run a model's code
    out += [*bound, "--chdir", here, "--"]
    return out + (["/bin/sh", "-c", argv[0]] if shell else argv)


def _kept_binds(kept: Sequence[Path], writable: Path) -> list[str]:
    """bubblewrap's arguments that keep the `kept` paths of `writable` read-only: those that
    exist (an absent one has a placeholder by now, `placeholders`; bwrap would make the others),
    after their folders inside `writable`, each bound over itself so that it cannot be renamed
    away and made again (`sub/agent.py`: `mv sub old && mkdir sub`). A kept link is kept where it
    leads (a bind follows it); the folders holding it are bound too (`links_put_back` puts a
    removed or replaced link back)."""
    paths = [p for p in leads_to(kept) if os.path.lexists(p) and p.is_relative_to(writable) and p != writable]
    links = [link for k in kept for link in links_on_the_way(k, writable)]
    folders = {f for p in (*paths, *links) for f in p.parents if f.is_relative_to(writable) and f != writable}
    out: list[str] = []
    for folder in sorted(folders, key=lambda f: len(f.parts)):
        out += ["--bind", str(folder), str(folder)]
    for path in sorted(paths, key=lambda p: len(p.parts)):
        out += ["--ro-bind", str(path), str(path)]
    return out


def _projects_in_system_folders() -> list[str]:
    """The projects of the files that hold keys or answers (`hide_from_models`) that lie in a
    folder a model's commands see (`SYSTEM_FOLDERS`: a project in `/opt/app`, `/usr/src/app`, as
    containers often have it), for those commands to see empty: each such file's git repository,
    else its folder, as a suite's files reach (`_paths`). Not one that is a system folder or holds
    one, nor one holding a program folder other than a Python venv (its libraries would go); nor
    one gone since (bubblewrap could not cover it)."""
    return [p for p in _projects_of(tuple(hidden_from_models()), tuple(_program_folders())) if os.path.isdir(p)]


@functools.lru_cache(maxsize=16)
def _projects_of(hidden: tuple[str, ...], programs: tuple[str, ...]) -> tuple[str, ...]:
    """`_projects_in_system_folders` of these hidden paths and program folders, parents only."""
    system = [str(Path(f).resolve()) for f in SYSTEM_FOLDERS if os.path.isdir(f)]
    resolved = [str(Path(p).resolve()) for p in programs]
    found: dict[str, None] = {}
    for path in hidden:
        folder = Path(path if os.path.isdir(path) else os.path.dirname(path))
        project = str(enclosing_repository(folder) or folder)
        inside = any(project != s and _within(project, s) for s in system)  # both resolved: no file looked at
        if inside and not any(_within(s, project) for s in system):
            if not any(_within(p, project) and _venv_of(p) is None for p in resolved):
                found[project] = None
    out: list[str] = []
    for project in sorted(found, key=len):  # parents first; what lies in one is covered with it
        if not any(_within(project, o) for o in out):
            out.append(project)
    return tuple(out)


#: The host folders a model's commands see (read-only): the system's programs, libraries and
#: settings. Everything else of the host (homes, /work, /srv, /mnt, /var, the eval files, the run
#: store) is not there; `/var/tmp` is private and empty.
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix", "/sys")


def _tmpfs_size(settings: SandboxSettings) -> list[str]:
    """`--size` for each private folder (a tmpfs: it lives in memory; `/dev/shm` too, and `/dev`
    itself is made read-only): at most `file_size_mb`,
    so a command cannot fill the machine's memory through /tmp. Empty where bubblewrap is too
    old to know `--size` (before 0.8)."""
    return ["--size", str(settings.file_size_mb * 2**20)] if _bwrap_knows_size() else []


@functools.cache
def _bwrap_knows_size() -> bool:
    try:
        shown = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--size" in shown.stdout + shown.stderr


def _private_var_tmp(size: Sequence[str]) -> list[str]:
    """A private `/var/tmp` over the host's (a temp folder of every user, which may hold their
    files and Unix sockets a command could connect to, network or not), where it is a folder."""
    path = Path("/var/tmp")
    return [*size, "--tmpfs", "/var/tmp"] if path.is_dir() and not path.is_symlink() else []


def _system_view(size: Sequence[str] = ()) -> list[str]:
    """bubblewrap's arguments that show only `SYSTEM_FOLDERS` (a top-level link such as
    `/bin -> usr/bin` stays a link), with a private `/var/tmp` of `size`."""
    out: list[str] = []
    for folder in SYSTEM_FOLDERS:
        path = Path(folder)
        if path.is_symlink():
            out += ["--symlink", os.readlink(path), folder]
        elif path.is_dir():
            out += ["--ro-bind", folder, folder]
    return out + ["--dir", "/var", *size, "--tmpfs", "/var/tmp"]


@functools.cache
def _covered_root_files() -> tuple[str, ...]:
    """bubblewrap's arguments that cover what of `/etc` other users may not read (`shadow`,
    `gshadow`, private keys): a command runs with uid 0 when convoeval is root, and owns them.
    Read once per process (about 40 ms here), and only as root: another user cannot read them."""
    out: list[str] = []
    if os.geteuid() != 0:
        return ()
    for current, dirs, files in os.walk("/etc"):
        for name in list(dirs):
            path = os.path.join(current, name)
            if not os.path.islink(path) and not _others_read(path):
                out += ["--tmpfs", path]
                dirs.remove(name)
        for name in files:
            path = os.path.join(current, name)
            if not os.path.islink(path) and not _others_read(path):
                out += ["--ro-bind", "/dev/null", path]
    return tuple(out)


def _covered_unseen(seen: Sequence[str], unseen: Sequence[str], needed: Sequence[str]) -> list[str]:
    """bubblewrap's arguments, after every other mount, that cover each `hide_from_models` path
    the command would see: one in a `seen` folder but not in an `unseen` one (a private tmpfs)
    unless in a `seen` one inside that. A file by an empty one, a folder by an empty one, both
    read-only, parents first; what lies in a folder covered already needs nothing (and could not
    be bound there: read-only), and a folder that is or holds one of `needed` (the working or
    writable folder, a folder shown on purpose) is not covered whole, only the paths listed in
    it. All paths are resolved."""
    out: list[str] = []
    covered: list[str] = []
    for path in sorted(hidden_from_models(), key=lambda p: p.count(os.sep)):
        if any(_within(path, c) for c in covered) or not _sees(path, seen, unseen) or os.path.islink(path):
            continue
        if os.path.isdir(path):
            if not any(_within(n, path) for n in needed):
                covered.append(path)
                out += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.lexists(path):
            out += ["--ro-bind", _empty_file(), path]
    return out


#: The empty file `_empty_file` made (the last one).
_empty: list[str] = []


def _empty_file() -> str:
    """An empty file to cover a hidden file with, readable by all (an agent CLI's user too),
    removed at exit (made again if gone meanwhile). Not `/dev/null`: a device there is no file
    (`test -f` fails), reading it is refused (bubblewrap binds without devices), writing it is
    swallowed, not refused."""
    if not _empty or not os.path.isfile(_empty[-1]):
        fd, path = tempfile.mkstemp(prefix="convoeval-empty-")
        os.close(fd)
        os.chmod(path, 0o444)
        atexit.register(Path(path).unlink, missing_ok=True)
        _empty.append(path)
    return _empty[-1]


def _sees(path: str, seen: Sequence[str], unseen: Sequence[str]) -> bool:
    """Whether the deepest of the `seen` and `unseen` folders holding `path` is a seen one."""
    depth = max((len(s) for s in seen if _within(path, s)), default=-1)
    return depth >= 0 and depth >= max((len(u) for u in unseen if _within(path, u)), default=-1)


def _within(path: str, folder: str) -> bool:
    """Whether the resolved `path` is the resolved `folder` or lies in it (no file looked at)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


#: How deep `_covered_private` looks in a home's folder that is shown (a version manager's holds
#: 100,000 files; the credentials of a tool lie at its top: `~/.cargo/credentials.toml`).
PRIVATE_DEPTH = 3


def _covered_private(folders: tuple[str, ...]) -> list[str]:
    """bubblewrap's arguments that cover what other users may not read in `folders`, the parts
    of a home a sandbox shows for the programs on PATH: `~/.cargo` for `~/.cargo/bin` also
    holds `credentials.toml` (mode 0600). A private file is covered by `/dev/null`, a private
    folder by an empty one, down to `PRIVATE_DEPTH` levels. Looked for once per process
    (`_private_in`); one gone since is left out (bubblewrap cannot cover what is not there)."""
    out: list[str] = []
    for folder, path in _private_in(folders):
        if os.path.lexists(path):
            out += ["--tmpfs", path] if folder else ["--ro-bind", "/dev/null", path]
    return out


@functools.lru_cache(maxsize=64)
def _private_in(folders: tuple[str, ...]) -> tuple[tuple[bool, str], ...]:
    """(is a folder, path) of what other users may not read in `folders`, to `PRIVATE_DEPTH`."""
    found: list[tuple[bool, str]] = []
    for top in folders:
        for current, dirs, files in os.walk(top):
            depth = len(Path(current).relative_to(top).parts)
            for name in list(dirs):
                path = os.path.join(current, name)
                if not os.path.islink(path) and not (_others_read(path) and _others_enter(path)):
                    found.append((True, path))
                    dirs.remove(name)
            if depth + 1 >= PRIVATE_DEPTH:
                dirs.clear()
            found += [
                (False, p) for n in files if not os.path.islink(p := os.path.join(current, n)) and not _others_read(p)
            ]
    return tuple(found)


def _in_homes(opened: Sequence[str], hidden: Sequence[str]) -> tuple[str, ...]:
    """The folders of `opened` that lie in a home (not those in a temp folder: a workspace, a
    venv in /tmp), resolved, each once."""
    temps = {str(Path(t).resolve()) for t in ("/tmp", tempfile.gettempdir())}
    out: dict[str, None] = {}
    for path in dict.fromkeys(str(Path(p).resolve()) for p in opened):
        holder = next((h for h in reversed(hidden) if path == h or _under(path, h)), None)
        if holder is not None and holder not in temps:
            out[path] = None
    return tuple(out)


def _others_enter(path: str) -> bool:
    try:
        return bool(os.lstat(path).st_mode & stat.S_IXOTH)
    except OSError:
        return True


def _others_read(path: str) -> bool:
    try:
        return bool(os.lstat(path).st_mode & stat.S_IROTH)
    except OSError:
        return True  # gone meanwhile: nothing to cover


@dataclass(frozen=True)
class AgentBox:
    """An agent CLI's sandbox: bubblewrap's command line, the user it starts as (None: convoeval's
    own), and what of the host must be opened up for that user first (`Reach`)."""

    argv: list[str]
    user: AgentUser | None = None
    reach: Reach = field(default_factory=Reach)


def agent_bwrap_argv(
    argv: list[str],
    workspace: Path,
    home: Path,
    readable: Sequence[Path],
    user: AgentUser | None = None,
    settings: SandboxSettings | None = None,
) -> AgentBox:
    """bubblewrap's command line for an agent CLI: a model's command's sandbox (only the system's
    folders, read-only: not the eval files or the run store; private /tmp and /run, new user,
    PID, IPC and UTS namespaces, the workspace the one writable
    host folder and the working directory), but with the host's network (the CLI must reach its
    model), the user's home hidden as well, `home` bound read-write as HOME (`AGENT_HOME`), and
    `readable` (the CLI's install) and the programs on PATH visible read-only. As root, bubblewrap
    starts as `user` (unprivileged: see `_agent_user`), and the paths it binds that `user` could
    not reach are opened up for it (`Reach`). The private folders hold at most `settings`'
    `file_size_mb` each."""
    out = [*_BWRAP, "--share-net"]  # as `user`, nothing inside has a capability on the host
    size = _tmpfs_size(settings) if settings is not None else []
    out += [*_system_view(size), "--dev", "/dev", *size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
    out += ["--proc", "/proc", *size, "--tmpfs", "/run"]
    hidden = _hidden([h for h in _user_homes() if Path(h).resolve() != Path("/")])
    shown = [*map(str, readable), *(p for p in _program_folders() if not any(_under(p, h) for h in hidden))]
    resolv = Path("/etc/resolv.conf").resolve()  # often a link into /run (systemd-resolved)
    if resolv.is_relative_to("/run") or any(_under(str(resolv), h) for h in hidden):
        shown.append(str(resolv))
    home_path, resolved = str(Path(home).resolve()), str(Path(workspace).resolve())
    binds = [str(Path(p).resolve()) for p in (*shown, *_program_folders())] + [home_path, resolved]
    closed = closed_folders(binds, user) if user is not None else []
    opened = _shown_programs(hidden, closed)
    shown += opened
    projects = _projects_in_system_folders()
    for folder in [*hidden, *projects]:
        out += [*size, "--tmpfs", folder]
    shown_paths = list(dict.fromkeys(str(Path(p).resolve()) for p in shown))
    for path in shown_paths:
        out += ["--ro-bind-try", path, path]
    if user is None:  # as another user, what only convoeval's user may read is out of reach anyway
        out += _covered_private(_in_homes(opened, hidden))
    out += ["--bind", home_path, AGENT_HOME, "--bind", resolved, resolved]
    out += _covered_unseen([*shown_paths, *SYSTEM_FOLDERS, resolved], [*hidden, "/var/tmp", *projects], [resolved])
    out += ["--chdir", resolved, "--", *argv]
    return AgentBox(out, user, Reach.of([*shown_paths, home_path, resolved], closed))


def _user_homes() -> list[str]:
    """`$HOME` and the user's home in the password database (when it has one)."""
    homes = [os.environ.get("HOME", "")]
    try:
        import pwd

        homes.append(pwd.getpwuid(os.getuid()).pw_dir)
    except (ImportError, KeyError):  # no pwd module, or a uid without an entry (a container's)
        pass
    return [h for h in homes if h]


def _hidden(extra: Sequence[str]) -> list[str]:
    """The folders a sandbox covers with an empty tmpfs: the temp folders and `extra`, parents
    before the folders inside them."""
    folders = {str(Path(t).resolve()) for t in ("/tmp", tempfile.gettempdir(), *extra)}
    return sorted(folders, key=lambda f: len(Path(f).parts))


def _program_folders() -> list[str]:
    """The folders programs run in the sandbox come from: those on PATH and this Python's."""
    folders = (*os.environ.get("PATH", "").split(os.pathsep), sys.prefix, sys.base_prefix)
    return [p for p in folders if os.path.isabs(p)]  # `.` on PATH would show convoeval's own folder


def _shown_programs(
    hidden: Sequence[str], closed: Sequence[str] = (), entries: Sequence[str] | None = None
) -> list[str]:
    """What of the hidden folders must stay readable for the programs on PATH and this Python
    (or `entries`): an entry under a temp folder itself; a Python venv or its `bin` under a home,
    the venv (`_venv_of`: not the project around `~/projects/app/.venv`); another entry under a
    home, the home's top folder that holds it (`~/.nvm`, `~/.pyenv`: a version manager's shims
    need the versions beside them; `~/projects` for a suite in `~/projects/evals/x`); an entry
    under a `closed` folder (that the agent's user cannot pass through) itself."""
    shown = []
    listed = _program_folders() if entries is None else entries
    for entry in [*listed, *filter(None, map(_venv_base, listed))]:  # a venv's python links to its base's
        holder = next((h for h in reversed(hidden) if _under(entry, h)), None)
        if holder is None:
            if any(_under(entry, c) for c in closed):
                shown.append(entry)
            continue
        rest = Path(entry).resolve().relative_to(holder)
        is_temp = holder in (str(Path("/tmp").resolve()), str(Path(tempfile.gettempdir()).resolve()))
        shown.append(entry if is_temp else _venv_of(entry) or str(Path(holder) / rest.parts[0]))
    return shown


def _venv_of(entry: str) -> str | None:
    """The Python venv `entry` is (a `sys.prefix`) or whose `bin` it is: the folder holding
    `pyvenv.cfg`; None for anything else."""
    path = Path(entry).resolve()
    return next((str(f) for f in (path, path.parent) if (f / "pyvenv.cfg").is_file()), None)


def _venv_base(entry: str) -> str | None:
    """The folder of the Python a venv (`_venv_of`) was made from: `home` in its `pyvenv.cfg`."""
    venv = _venv_of(entry)
    try:
        lines = Path(venv, "pyvenv.cfg").read_text().splitlines() if venv else []
    except (OSError, UnicodeDecodeError):
        return None
    found = [v.strip() for k, _, v in (line.partition("=") for line in lines) if k.strip() == "home"]
    return found[0] if found and os.path.isabs(found[0]) else None


def _under(path: str, folder: str) -> bool:
    """Whether `path` lies inside `folder` (the folder itself does not count)."""
    resolved = Path(path).resolve()
    return resolved != Path(folder) and resolved.is_relative_to(folder)


async def docker_argv(
    argv: list[str],
    shell: bool,
    cwd: Path,
    writable: Path | None,
    env: Mapping[str, str],
    settings: SandboxSettings,
    name: str,
) -> list[str]:
    if shutil.which("docker") is None:
        raise SandboxError("--sandbox docker: the docker command is not installed")
    probe = await asyncio.create_subprocess_exec(
        "docker",
        "info",
        "--format",
        "{{.ServerVersion}}",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    if await probe.wait() != 0:
        raise SandboxError("--sandbox docker: no Docker daemon is reachable (start it, or choose another --sandbox)")
    out = ["docker", "run", "--rm", "-i", "--name", name, "--read-only", "--tmpfs", "/tmp", "--tmpfs", SANDBOX_HOME]
    out += ["--tmpfs", "/run"]
    out += ["--network", "bridge" if settings.network else "none", "--pids-limit", str(settings.processes)]
    out += ["--memory", f"{settings.memory_mb}m", "--ulimit", f"fsize={settings.file_size_mb * 1024 * 1024}"]
    out += ["--ulimit", f"cpu={settings.cpu_seconds}"]
    for key in env:  # values come from the docker client's environment, never the command line
        out += ["-e", key]
    if writable is not None:
        resolved = str(Path(writable).resolve())
        out += ["-v", f"{resolved}:{resolved}"]
    out += ["-w", str(Path(cwd).resolve()), settings.image]
    return out + (["/bin/sh", "-c", argv[0]] if shell else argv)
