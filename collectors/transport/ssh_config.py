"""Reading an OpenSSH client config the way the SSH client would, and what in it runs code.

An ssh_config is code as much as data: asyncssh (which fabtop connects with) runs
``ProxyCommand`` and ``Match exec`` and loads ``PKCS11Provider``'s library, and OpenSSH
runs more. A file named by a fabtop config, which may be shared, is checked with
:func:`check_no_commands` before it is used (DESIGN §10). No asyncssh import here: the
command line reads ``Host`` lines through this module and ``fabtop --help`` must not pay
for asyncssh.

Reading is deliberately more suspicious than either client: every ``Host`` and ``Match``
block is read whatever host it is for, every ``Include`` is followed, and a line's keyword
is taken both as asyncssh takes it (``shlex`` words, ``Key=value``, ``=Key``) and as OpenSSH
does (up to a blank or ``=``, quotes dropped), compared after ``str.lower`` as asyncssh
compares it (``\\u212a`` lowers to ``k``).
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Options whose value the SSH client runs as a command or loads as code. Others are
# harmless to a monitor that runs its own command on nodes it verifies the keys of:
# - ProxyJump: asyncssh opens the jump connection itself (host key checked, no local
#   process); the target's own host key is still verified end to end.
# - RemoteCommand: fabtop always names its command, which wins over the config's.
# - PermitLocalCommand, ProxyUseFdpass: only switch on options refused here.
# - EnableSSHKeySign: runs the fixed, setuid ssh-keysign, not a program the file names.
# - IdentityAgent, IdentityFile, CertificateFile, UserKnownHostsFile: files and sockets
#   read as data (a fabtop config may name known_hosts itself); a UserKnownHostsFile of
#   "none" is refused by the transport for every config (host_keys_unchecked).
# - SendEnv, SetEnv: variables for the nodes fabtop already logs in to (their sshd's
#   AcceptEnv decides); ForwardAgent and GSSAPIDelegateCredentials are forced off by
#   the transport whatever the file says.
# - LocalForward, RemoteForward, DynamicForward, ForwardX11, ControlMaster: asyncssh
#   ignores them in a config file.
RUNS: dict[str, tuple[str, str]] = {
    "proxycommand": ("ProxyCommand", "runs a local command"),
    "localcommand": ("LocalCommand", "runs a local command"),
    "knownhostscommand": ("KnownHostsCommand", "runs a local command"),
    "xauthlocation": ("XAuthLocation", "names a local program ssh runs"),
    "pkcs11provider": ("PKCS11Provider", "loads a local library into the client"),
    "securitykeyprovider": ("SecurityKeyProvider", "loads a local library into the client"),
}
# OpenSSH's own limit on nested Include (asyncssh has none and recurses until it fails).
INCLUDE_DEPTH = 16
# Files read for one config, Includes and globs together: "Include a a" in a, 16 deep,
# would otherwise be 65,536 reads.
MAX_FILES = 256
# Larger than any real ssh_config; a file this big is a mistake or an attack.
MAX_BYTES = 1 << 20

_OPENSSH_KEY = re.compile(r"[^\s=]+")


class SshConfigError(ValueError):
    """A config that cannot be read, or one line that runs code; one line naming file and line.

    ``runs`` is true when the line runs a command or loads code (the caller may say how to
    allow it), false when the file could not be read or checked at all.
    """

    def __init__(self, message: str, runs: bool = False) -> None:
        super().__init__(message)
        self.runs = runs


@dataclass(frozen=True, slots=True)
class ConfigLine:
    """One option line of an ssh_config or of a file it includes."""

    where: str  # "ssh_config FILE line N", with the Include that led there
    keywords: frozenset[str]  # lower-cased: the keyword as asyncssh and as OpenSSH read it
    args: tuple[str, ...]


def config_lines(
    path: str | Path, *, strict: bool, ssh_dir: Path | None = None
) -> Iterator[ConfigLine]:
    """Every option line of ``path`` and of the files it includes, in order.

    ``Include`` is resolved as asyncssh resolves it: ``~`` expanded, a relative pattern
    under ``ssh_dir`` (``~/.ssh``), globbed, regular files only. ``strict``: a file that
    cannot be read, too deep an ``Include`` or too many files raise SshConfigError; else
    they are skipped, as ``ssh`` skips an unreadable config when it only looks for names.
    """
    base = ssh_dir if ssh_dir is not None else Path("~/.ssh").expanduser()
    yield from _lines(Path(path), None, base, 0, itertools.count(1), strict)


def _lines(
    path: Path,
    origin: str | None,
    base: Path,
    depth: int,
    read: itertools.count[int],
    strict: bool,
) -> Iterator[ConfigLine]:
    """``origin``: the first Include line that led here (None for the file named)."""
    where = f"ssh_config {path}" if origin is None else f"{origin}: included {path}"
    try:
        if next(read) > MAX_FILES:
            raise SshConfigError(f"{where}: Include reads more than {MAX_FILES} files")
        try:
            with path.open("rb") as f:
                data = f.read(MAX_BYTES + 1)
        except OSError as exc:
            raise SshConfigError(f"{where}: cannot read: {exc.strerror or exc}") from None
        if len(data) > MAX_BYTES:
            raise SshConfigError(f"{where}: larger than {MAX_BYTES >> 20} MiB")
    except SshConfigError:
        if strict:
            raise
        return
    # splitlines() breaks at every character universal newlines do (asyncssh's reading)
    # and more; a line cut short here starts where asyncssh's stripped line starts.
    for number, raw in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        here = f"{where} line {number}"
        keywords, args = _split(line)
        yield ConfigLine(here, keywords, args)
        if "include" not in keywords:
            continue
        if depth + 1 > INCLUDE_DEPTH:
            if strict:
                raise SshConfigError(f"{here}: Include nested deeper than {INCLUDE_DEPTH} files")
            continue
        for inc in _included(args, base, here, strict):
            yield from _lines(inc, origin or here, base, depth + 1, read, strict)


def _split(line: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """The keyword as asyncssh and as OpenSSH read it, and the words after it (asyncssh's)."""
    keys: set[str] = set()
    m = _OPENSSH_KEY.search(line.lstrip(" \t="))
    if m:
        keys.add(m.group().replace('"', "").replace("'", "").lower())
    try:
        words = shlex.split(line)
    except ValueError:  # asyncssh refuses the line; read it leniently anyway
        words = line.replace('"', " ").replace("'", " ").split()
    # asyncssh's SSHConfig.parse: "=x" is x; "Key=value" and "Key= value" are Key, value;
    # after the keyword only Host and Match split their words at "=".
    args: list[str] = []
    key: str | None = None
    split_equal = True
    for i, word in enumerate(words):
        if word.startswith("="):
            args += [word[1:]] if len(word) > 1 else []
        elif not split_equal:
            args.append(word)
        elif word.endswith("="):
            args.append(word[:-1])
        elif "=" in word:
            args += word.split("=", 1)
        else:
            args.append(word)
        if key is None and args:
            key = args.pop(0).lower()
            keys.add(key)
            split_equal = key in ("host", "match")
        elif i == 0:
            break  # a lone "=" first: asyncssh fails on the line
    return frozenset(keys), tuple(args)


def _included(args: tuple[str, ...], base: Path, where: str, strict: bool) -> Iterator[Path]:
    for pattern in args:
        path = Path(pattern).expanduser()
        if path.anchor:
            root, rel = Path(path.anchor), str(Path(*path.parts[1:]))
        else:
            root, rel = base, pattern
        try:
            # Bounded: a pattern like /** would otherwise walk the whole disk.
            found = list(itertools.islice(root.glob(rel), MAX_FILES * 16))
        except (ValueError, OSError) as exc:
            if strict:
                raise SshConfigError(f"{where}: Include {pattern!r}: {exc}") from None
            continue
        yield from (p for p in found if p.is_file())


def check_no_commands(path: str | Path, ssh_dir: Path | None = None) -> None:
    """Raise SshConfigError (``runs`` true) at the first line of ``path``, or of a file it
    includes, that runs a local command or loads code; also when it cannot be read whole.
    """
    for line in config_lines(path, strict=True, ssh_dir=ssh_dir):
        for key in sorted(line.keywords & RUNS.keys()):
            name, why = RUNS[key]
            raise SshConfigError(f"{line.where}: {name} {why}", runs=True)
        if "match" in line.keywords and any(
            w.lower() in ("exec", "!exec") for arg in line.args for w in re.split(r"[\s=]+", arg)
        ):
            raise SshConfigError(f"{line.where}: Match exec runs a local command", runs=True)


def host_keys_unchecked(path: str | Path, ssh_dir: Path | None = None) -> str | None:
    """Where ``path`` (or a file it includes) says ``UserKnownHostsFile none``, else None.

    OpenSSH then still refuses an unknown key; asyncssh, given no known_hosts of its own,
    accepts every key. Read leniently: a file asyncssh cannot read fails its own way.
    """
    for line in config_lines(path, strict=False, ssh_dir=ssh_dir):
        if "userknownhostsfile" in line.keywords and [a.lower() for a in line.args] == ["none"]:
            return line.where
    return None
