"""Hosts and settings: hostlist expressions on the command line, or a TOML file (``-c``).

Every error is one line that names the file, the host and the field, so a
mistake in a 64-host config is found without reading a traceback.
"""

from __future__ import annotations

import os
import re
import socket
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import hostlist

from collectors.numbers import is_digits
from collectors.probe import PROBE_KINDS, ProbeArgError, ProbeArgs, build_argv
from collectors.transport.ssh_config import SshConfigError, check_no_commands, config_lines
from fabtop.core.cables import Cable, CableEnd
from fabtop.core.expect import FIELDS, LINK_LAYERS, Expect
from fabtop.core.firewall_ports import DEFAULT_FIREWALL_PORTS, PortRange, parse_port_spec
from fabtop.core.nccl import IB_RETRY_CNT_RANGE, IB_TIMEOUT_RANGE, NcclTimeouts
from fabtop.core.thresholds import threshold_range, unknown_thresholds

# Names fabtop puts on screen and in file names; SSH targets are checked separately.
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# A hostlist bigger than this needs --many-hosts: 10,000 SSH sessions at once is a
# mistake far more often than a plan.
MAX_HOSTS = 256
# What one hostlist expression may name at all, counted before anything is expanded
# (python-hostlist's own bound on one range).
HOSTLIST_LIMIT = 100_000
_MAX_URL = 2048
# user@host:port, user@[v6]:port; host is a DNS name, IPv4 or bracketed IPv6.
_TARGET_RE = re.compile(
    r"^(?:(?P<user>[A-Za-z0-9_.-]{1,32})@)?"
    r"(?P<host>[A-Za-z0-9_.-]{1,253}|\[[0-9A-Fa-f:.%A-Za-z]{2,64}\])"
    r"(?::(?P<port>[0-9]{1,5}))?$"
)

# Past this many links the overview starts with its groups folded ([dashboard]
# fold_past_links): 64 fit a tall terminal; past that, only what has something to say.
FOLD_PAST_LINKS = 64
DASHBOARD_KEYS = ("fold_past_links",)

DEFAULT_PATH = ("/usr/sbin", "/sbin", "/usr/bin", "/bin", "/opt/mellanox/bin", "/usr/local/bin")
LOCAL = "local"


class ConfigError(ValueError):
    """A bad host argument, file or field; the message is one line naming where."""


@dataclass(slots=True, frozen=True)
class SshTarget:
    """A parsed ``user@host:port`` target."""

    host: str
    user: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        s = f"{self.user}@" if self.user else ""
        s += self.host
        if self.port:
            s += f":{self.port}"
        return s


@dataclass(slots=True)
class HostConfig:
    """One monitored node."""

    name: str
    ssh: SshTarget | None = None  # None: this machine, through the local transport
    path: tuple[str, ...] = DEFAULT_PATH
    sysfs: str = "/sys"
    interfaces: tuple[str, ...] | None = None
    inference: tuple[str, ...] = ()
    # Which probe runs on the node: "auto" (the fast probe where python3 >= 3.6 is,
    # else the sh probe), "python" (the fast one or an error) or "sh".
    probe: str = "auto"
    # Read the packet filter through ``sudo -n`` where the SSH user is not root.
    firewall_sudo: bool = False
    # Read module EEPROMs (``ethtool -m``) through ``sudo -n`` where the SSH user is not root.
    optics_sudo: bool = False
    # Also read each port's module and physical counters with NVIDIA MFT's ``mlxlink`` (one
    # device per optics round, ~0.8 s of firmware access each; off by default). Needs root,
    # or ``optics_sudo`` where the SSH user is not root.
    optics_mlxlink: bool = False
    # What the host must have ([expect] with its [host.expect] over it); None: nothing.
    expect: Expect | None = None
    # ``fabtop test``'s rails by interface (netdev, RDMA device or device/port); empty: by
    # position among the host's RDMA ports (fabtop/fabtest/rails.py).
    rails: dict[str, int] = field(default_factory=dict)

    @property
    def target(self) -> str:
        """What the user wrote to reach this host (``local`` for this machine)."""
        return str(self.ssh) if self.ssh else LOCAL


@dataclass(slots=True)
class Config:
    """Everything a fabtop command needs to know about the fabric it watches."""

    hosts: list[HostConfig]
    interval: float = 1.0
    source: str = "command line"
    thresholds: dict[str, float] = field(default_factory=dict)
    known_hosts: str | None = None
    ssh_config: str | None = None
    # May ssh_config run local commands (ProxyCommand, Match exec, ...)? Only when the
    # operator named it (--ssh-config) or passed --allow-ssh-commands: a config file,
    # which may be shared, is data (DESIGN §10).
    allow_ssh_commands: bool = False
    # TCP ports the RDMA path needs open on the fabric interfaces ([firewall] ports).
    firewall_ports: tuple[PortRange, ...] = DEFAULT_FIREWALL_PORTS
    # The [expect] table for all hosts (each host's own, overrides merged, is HostConfig's).
    expect: Expect | None = None
    # A job's NCCL_IB_TIMEOUT and NCCL_IB_RETRY_CNT ([nccl]): NCCL's defaults when absent.
    nccl: NcclTimeouts = field(default_factory=NcclTimeouts)
    # The overview's groups start folded past this many links ([dashboard]).
    fold_past_links: int = FOLD_PAST_LINKS
    # [[cable]] pairs: which ports a cable joins (the cable panel shows both ends).
    cables: tuple[Cable, ...] = ()


def parse_target(text: str, where: str) -> SshTarget:
    """Parse ``[user@]host[:port]``; reject anything else (it ends up in an SSH call)."""
    m = _TARGET_RE.match(text)
    if not m:
        raise ConfigError(f"{where}: bad SSH target {text!r} (want [user@]host[:port])")
    port = m.group("port")
    host = m.group("host")
    if host.startswith("-"):
        raise ConfigError(f"{where}: bad SSH host {host!r}")
    return SshTarget(
        host=host,
        user=m.group("user"),
        port=None if port is None else config_port(port, where, f"SSH port in {text!r}"),
    )


def _too_many(n: int, max_hosts: int | None, where: str) -> None:
    if max_hosts is not None and n > max_hosts:
        raise ConfigError(
            f"{where}: {n} hosts is more than {max_hosts}; pass --many-hosts to monitor them all"
        )
    if n > HOSTLIST_LIMIT:
        raise ConfigError(f"{where}: {n} hosts is more than fabtop watches ({HOSTLIST_LIMIT})")


def hostlist_size(expr: str) -> int:
    """How many names ``expr`` expands to at most (duplicates counted), without expanding it.

    Follows python-hostlist's grammar (top-level commas, one bracket level, ranges
    ``a-b`` and single numbers); what it cannot read counts 1 and is left to the
    expansion to refuse with its own message. ValueError for a number of over 18 digits.
    """
    total = 0
    depth = 0
    part = ""
    for c in expr + ",":
        if c == "," and depth == 0:
            total += _part_size(part) if part else 0
            part = ""
            continue
        part += c
        depth += (c == "[") - (c == "]")
    return total


def _part_size(part: str) -> int:
    size = 1
    for rangelist in re.findall(r"\[([^\]]*)\]", part):
        n = 0
        for rng in rangelist.split(","):
            lo, sep, hi = rng.partition("-")
            if not (is_digits(lo) and (not sep or is_digits(hi))):  # ASCII only: not "²"
                n += 1
            elif len(lo) > 18 or len(hi) > 18:  # beyond any cluster (and int()'s limits)
                raise ValueError(f"number in range {rng[:24]!r}... is too long")
            else:
                n += max(1, int(hi) - int(lo) + 1) if sep else 1
        size *= max(1, n)
        if size > HOSTLIST_LIMIT:
            return size
    return size


def expand(expr: str, where: str, max_hosts: int | None = MAX_HOSTS) -> list[str]:
    """Expand a Slurm/pdsh hostlist expression (``node[01-04]``, ``a,b``), size checked first."""
    shown = expr if len(expr) <= 80 else expr[:77] + "..."
    try:
        size = hostlist_size(expr)
    except ValueError as e:
        raise ConfigError(f"{where}: bad hostlist expression {shown!r}: {e}") from None
    _too_many(size, None, where)
    try:
        out: list[str] = hostlist.expand_hostlist(expr)
    except (hostlist.BadHostlist, ValueError) as e:
        raise ConfigError(f"{where}: bad hostlist expression {shown!r}: {e}") from None
    if not out:
        raise ConfigError(f"{where}: hostlist expression {expr!r} names no host")
    _too_many(len(out), max_hosts, where)
    return out


def hosts_from_args(args: Iterable[str], max_hosts: int | None = MAX_HOSTS) -> list[HostConfig]:
    """Hosts from positional arguments: ``node[01-04] admin@gpu[1-2]:2222 local``.

    More than ``max_hosts`` (None: no bound but fabtop's own) is refused before any
    connection is tried.
    """
    hosts: list[HostConfig] = []
    names: set[str] = set()
    for arg in args:
        # NAME=TARGET names a host explicitly (two sshd ports on one address, say).
        label, sep, expr = arg.partition("=")
        if not sep:
            label, expr = "", arg
        for item in expand(expr, "command line", max_hosts):
            if item == LOCAL:
                hosts.append(HostConfig(name=label or _local_name()))
                names.add(hosts[-1].name)
                continue
            target = parse_target(item, "command line")
            name = label or target.host.strip("[]")
            if not label and target.port and name in names:
                name = f"{name}_{target.port}"
            hosts.append(HostConfig(name=_check_name(name, "command line"), ssh=target))
            names.add(name)
        _too_many(len(hosts), max_hosts, "command line")
    return _unique(hosts, "command line")


def local_config(interval: float = 1.0) -> Config:
    """Watch only this machine (what ``fabtop`` with no hosts does)."""
    ival = check_interval(interval, "command line", "--interval")
    return Config(hosts=[HostConfig(name=_local_name())], interval=ival)


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/fabtop/config.toml``, or ``~/.config/fabtop/config.toml``.

    An unset, empty or relative ``XDG_CONFIG_HOME`` is ignored, as the XDG Base Directory
    specification says.
    """
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME", "")
    if not base or not os.path.isabs(base):
        home = env.get("HOME") or os.path.expanduser("~")
        base = os.path.join(home, ".config")
    return Path(base) / "fabtop" / "config.toml"


def default_config(
    interval: float | None = None,
    max_hosts: int | None = MAX_HOSTS,
    env: Mapping[str, str] | None = None,
) -> Config:
    """What a command watches when given no hosts and no ``-c``: the user's config file
    (:func:`user_config_path`) when there is one, else this machine.

    A dangling symlink counts as a file, so its error names it instead of fabtop quietly
    watching ``local``.
    """
    path = user_config_path(env)
    if path.exists() or path.is_symlink():
        return load_config(path, interval, max_hosts=max_hosts)
    return local_config(interval or 1.0)


def ssh_config_names(host: str, path: str | None = None) -> bool:
    """True when a ``Host`` line of the SSH client config names ``host``.

    The config is ``path`` (``--ssh-config``) or ``~/.ssh/config``, with its ``Include``
    files; patterns match as asyncssh (which fabtop connects with) matches them. A
    pattern list that also matches the empty name (``Host *``) names every host, so no
    host in particular: it does not count. An unreadable config names nothing, as for ssh.
    """
    from asyncssh.pattern import WildcardPatternList

    for patterns in _ssh_host_lines(path):
        try:
            wanted = WildcardPatternList(patterns)
            if wanted.matches(host) and not wanted.matches(""):
                return True
        except ValueError:
            continue
    return False


def ssh_config_hosts(path: str | None = None) -> list[str]:
    """The plain names (no wildcard, no negation) of the SSH config's ``Host`` lines."""
    names: list[str] = []
    for patterns in _ssh_host_lines(path):
        names += [
            n
            for n in patterns.split(",")
            if n and not any(c in n for c in "*?!") and n not in names
        ]
    return names


def _ssh_host_lines(path: str | None) -> Iterable[str]:
    """The pattern list of every ``Host`` line of the config and the files it includes."""
    start = Path(path).expanduser() if path else Path("~/.ssh/config").expanduser()
    for line in config_lines(start, strict=False):
        if "host" in line.keywords and line.args:
            yield ",".join(line.args)


def refuse_ssh_commands(config: Config) -> None:
    """ConfigError when the ssh_config a config file names runs a local command or loads
    code (:mod:`collectors.transport.ssh_config`), or cannot be read to tell; nothing
    when the operator allowed it (``allow_ssh_commands``) or no file is named.
    """
    if not config.ssh_config or config.allow_ssh_commands:
        return
    try:
        check_no_commands(config.ssh_config)
    except SshConfigError as e:
        hint = "; pass --allow-ssh-commands to allow it" if e.runs else ""
        raise ConfigError(f"{config.source}: {e}{hint}") from None


def _probe_check(where: str, key: str, args: ProbeArgs) -> None:
    """The probe's own argument rules (collectors.probe), applied to one config field."""
    try:
        build_argv(args)
    except ProbeArgError as e:
        raise ConfigError(f"{where}: field {key!r}: {e}") from None


def check_interval(value: object, where: str, name: str = "field 'interval'") -> float:
    """Seconds between frames: a finite number the probe accepts (0.1..60)."""
    value = config_number(value, where, name, 0.1, 60, what="a number of seconds in 0.1..60")
    try:
        build_argv(ProbeArgs(interval_ms=int(value * 1000)))
    except ProbeArgError:
        raise ConfigError(
            f"{where}: {name} must be a number of seconds in 0.1..60, got {value!r}"
        ) from None
    return float(value)


def config_number(
    value: object,
    where: str,
    name: str,
    lo: float,
    hi: float,
    *,
    whole: bool = False,
    what: str = "",
) -> float:
    """Every number of a config is read here, one way (DESIGN §10: config is an input too).

    A TOML integer or float: a bool is not a number, TOML's ``nan`` and ``inf`` are
    refused, and so is anything outside ``lo..hi``. ``whole``: an integer, or one written
    in a string (the port of ``"admin@node1:2222"``, ``"32768-60999"``) in ASCII digits
    only (:func:`collectors.numbers.is_digits`). ConfigError: ``{where}: {name} must be
    {what}, got {value!r}``.
    """
    v: float | None = None
    if isinstance(value, bool):
        pass  # an int to Python, never a number in a config
    elif isinstance(value, int) or (isinstance(value, float) and not whole):
        v = value
    elif isinstance(value, str) and whole and is_digits(value) and len(value) <= 20:
        v = int(value)  # 20 digits is beyond any bound here, far from int()'s own limit
    # NaN fails both comparisons and ±Inf one: the range refuses them (lo, hi are finite).
    if v is None or not lo <= v <= hi:
        what = what or f"a {'whole ' if whole else ''}number in {lo:g}..{hi:g}"
        shown = str(value).lower() if isinstance(value, bool) else repr(value)  # TOML's spelling
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise ConfigError(f"{where}: {name} must be {what}, got {shown}")
    return float(v)


def config_port(value: object, where: str, name: str, what: str = "") -> int:
    """A TCP port (1..65535), through :func:`config_number`."""
    return int(config_number(value, where, name, 1, 65535, whole=True, what=what))


def _local_name() -> str:
    name = socket.gethostname().split(".")[0] or "localhost"
    return name if _NAME_RE.match(name) else "localhost"


def _check_name(name: str, where: str) -> str:
    if not _NAME_RE.match(name):
        raise ConfigError(f"{where}: bad host name {name!r} (letters, digits, '_', '.', '-')")
    return name


def _unique(hosts: list[HostConfig], where: str) -> list[HostConfig]:
    seen: set[str] = set()
    for h in hosts:
        if h.name in seen:
            raise ConfigError(f"{where}: host {h.name!r} is listed twice")
        seen.add(h.name)
    return hosts


_HOST_KEYS = {
    "name",
    "ssh",
    "path",
    "sysfs",
    "interfaces",
    "inference",
    "probe",
    "firewall_sudo",
    "optics_sudo",
    "optics_mlxlink",
    "expect",
    "rails",
}
_TOP_KEYS = {
    "interval",
    "host",
    "defaults",
    "thresholds",
    "known_hosts",
    "ssh_config",
    "firewall",
    "expect",
    "nccl",
    "dashboard",
    "cable",
}


def load_config(
    path: str | Path, interval: float | None = None, max_hosts: int | None = MAX_HOSTS
) -> Config:
    """Read a TOML config; raise ConfigError with file, host and field on any problem."""
    return config_from_dict(read_toml(path), str(path), interval, max_hosts)


def read_toml(path: str | Path) -> dict[str, Any]:
    """A TOML file's tables; ConfigError naming the file when it cannot be read."""
    where = str(path)
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{where}: cannot read: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{where}: not valid TOML: {e}") from None


def config_from_dict(
    data: Mapping[str, Any],
    where: str,
    interval: float | None = None,
    max_hosts: int | None = MAX_HOSTS,
) -> Config:
    """Build a Config from parsed TOML (separate so tests and --demo can reuse it)."""
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown setting {sorted(unknown)[0]!r}")
    ival = check_interval(data.get("interval", 1.0), where)
    if interval is not None:
        ival = check_interval(interval, "command line", "--interval")
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ConfigError(f"{where}: [defaults] must be a table")
    if "expect" in defaults:
        raise ConfigError(f"{where}: [defaults] expect: put what all hosts must have in [expect]")
    common = parse_expect(data["expect"], f"{where}: [expect]") if "expect" in data else None
    raw_hosts = data.get("host", [])
    if not isinstance(raw_hosts, list) or not raw_hosts:
        raise ConfigError(f"{where}: no [[host]] entries")
    hosts: list[HostConfig] = []
    for i, raw in enumerate(raw_hosts):
        if not isinstance(raw, dict):
            raise ConfigError(f"{where}: host #{i + 1} must be a table")
        hosts.extend(
            _hosts_from_table({**defaults, **raw}, f"{where}: host #{i + 1}", max_hosts, common)
        )
        _too_many(len(hosts), max_hosts, where)
    thresholds = data.get("thresholds", {})
    if not isinstance(thresholds, dict):
        raise ConfigError(f"{where}: [thresholds] must map names to finite numbers")
    typos = unknown_thresholds(thresholds)
    if typos:
        raise ConfigError(f"{where}: [thresholds]: unknown threshold {typos[0]!r}")
    thresholds = {
        k: config_number(v, where, f"[thresholds] {k}", *threshold_range(k))
        for k, v in thresholds.items()
    }
    known = data.get("known_hosts")
    ssh_cfg = data.get("ssh_config")
    for key, val in (("known_hosts", known), ("ssh_config", ssh_cfg)):
        if val is not None and not isinstance(val, str):
            raise ConfigError(f"{where}: field {key!r} must be a path string")
    hosts = _unique(hosts, where)
    return Config(
        hosts=hosts,
        interval=ival,
        source=where,
        thresholds={str(k): v for k, v in thresholds.items()},
        known_hosts=known,
        ssh_config=ssh_cfg,
        firewall_ports=_firewall_ports(data.get("firewall", {}), where),
        expect=common,
        nccl=_nccl(data["nccl"], where) if "nccl" in data else NcclTimeouts(),
        fold_past_links=_fold_past(data.get("dashboard", {}), where),
        cables=parse_cables(data.get("cable", []), where, {h.name for h in hosts}),
    )


def _fold_past(table: Any, where: str) -> int:
    """[dashboard] fold_past_links: a whole number of links (0 folds from the start)."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [dashboard] must be a table")
    unknown = sorted(set(table) - set(DASHBOARD_KEYS))
    if unknown:
        raise ConfigError(
            f"{where}: [dashboard]: unknown field {unknown[0]!r} (it takes 'fold_past_links')"
        )
    if "fold_past_links" not in table:
        return FOLD_PAST_LINKS
    return int(
        config_number(
            table["fold_past_links"],
            where,
            "[dashboard] fold_past_links",
            0,
            100_000,
            whole=True,
            what="a whole number of links in 0..100000",
        )
    )


def parse_cables(raw: Any, where: str, hosts: set[str]) -> tuple[Cable, ...]:
    """``[[cable]] a = "node1/enp65s0f0np0"  b = "switch1"`` (or ``"node2/<port>"``)."""
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: cable must be [[cable]] tables with fields a and b")
    out: list[Cable] = []
    used: dict[CableEnd, int] = {}
    for i, table in enumerate(raw, 1):
        w = f"{where}: cable #{i}"
        if not isinstance(table, dict):
            raise ConfigError(f"{w} must be a table with fields a and b")
        unknown = set(table) - {"a", "b"}
        if unknown:
            raise ConfigError(f"{w}: unknown field {sorted(unknown)[0]!r} (a cable has a and b)")
        a, b = (_cable_end(table.get(k), w, k, hosts) for k in ("a", "b"))
        if a == b:
            raise ConfigError(f"{w}: a and b are the same end {a.label!r}")
        if a.port is None and b.port is None:
            raise ConfigError(f"{w}: neither end is a fabtop host's port (host/port)")
        for k, end in (("a", a), ("b", b)):
            if end.port is not None and end in used:
                raise ConfigError(
                    f"{w}: field {k!r}: port {end.label!r} is already in cable #{used[end]}"
                )
            used[end] = i
        out.append(Cable(a, b))
    return tuple(out)


def _cable_end(value: Any, w: str, key: str, hosts: set[str]) -> CableEnd:
    where = f"{w}: field {key!r}"
    if not isinstance(value, str) or not value:
        raise ConfigError(f'{where}: want "host/port" or a device name like "switch1"')
    host, slash, port = value.partition("/")
    _check_name(host, where)
    if not slash:
        if host in hosts:
            raise ConfigError(f"{where}: {value!r} is a fabtop host: name its port (host/port)")
        return CableEnd(host, None)  # a device fabtop does not watch
    if host not in hosts:
        raise ConfigError(f"{where}: unknown host {host!r} (not a [[host]] of this file)")
    iface, _, rdma_port = port.partition("/")  # an RDMA port: mlx5_0/1
    _probe_check(w, key, ProbeArgs(interfaces=(iface,)))
    if rdma_port and not (rdma_port.isdigit() and len(rdma_port) <= 3):
        raise ConfigError(f"{where}: bad port {port!r}: a netdev, or RDMA device/number")
    return CableEnd(host, port)


def _nccl(table: Any, where: str) -> NcclTimeouts:
    """``[nccl] ib_timeout = 20, ib_retry_cnt = 7``: a job's NCCL_IB_TIMEOUT and
    NCCL_IB_RETRY_CNT, which fabtop cannot read from the job's environment."""
    if not isinstance(table, dict) or set(table) - {"ib_timeout", "ib_retry_cnt"}:
        raise ConfigError(f"{where}: [nccl] takes 'ib_timeout' and 'ib_retry_cnt'")
    got = {
        key: int(config_number(table[key], where, f"[nccl] {key}", *bounds, whole=True))
        for key, bounds in (("ib_timeout", IB_TIMEOUT_RANGE), ("ib_retry_cnt", IB_RETRY_CNT_RANGE))
        if key in table
    }
    return NcclTimeouts(**got, source=f"{where}: [nccl]")


def parse_expect(table: Any, where: str) -> Expect:
    """An ``[expect]`` (or ``[host.expect]``) table, every field checked; ``where`` names
    the table (``fabtop.toml: [expect]``). The fields: :data:`fabtop.core.expect.FIELDS`."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table of fields")
    specs = {f.name: f for f in FIELDS}
    unknown = sorted(set(table) - set(specs))
    if unknown:
        raise ConfigError(f"{where}: unknown field {unknown[0]!r} (one of {', '.join(specs)})")
    got: dict[str, Any] = {}
    for key, v in table.items():
        name = f"field {key!r}"
        if key == "link_layer":
            layer = next(
                (n for n in LINK_LAYERS if isinstance(v, str) and v.lower() == n.lower()), None
            )
            if layer is None:
                shown = repr(v) if isinstance(v, str) else str(v).lower()
                raise ConfigError(
                    f"{where}: {name} must be InfiniBand or Ethernet, got {shown[:40]}"
                )
            got[key] = layer
        elif key == "inference":
            if not isinstance(v, bool):
                raise ConfigError(f"{where}: {name} must be true or false, got {str(v)[:40]!r}")
            got[key] = v
        else:
            spec = specs[key]
            what = f"a {'whole ' if spec.whole else ''}number in {spec.lo:g}..{spec.hi:g}"
            # A number written in a string ("9000") is a typo here, not a port spec.
            n = config_number(
                v,
                where,
                name,
                spec.lo,
                spec.hi,
                whole=spec.whole and not isinstance(v, str),
                what=what,
            )
            got[key] = int(n) if spec.whole else n
    return Expect(**got)


def _firewall_ports(table: Any, where: str) -> tuple[PortRange, ...]:
    """``[firewall] ports = [18515, 29500, "32768-60999"]``: numbers or "low-high" ranges."""
    if not isinstance(table, dict) or set(table) - {"ports"}:
        raise ConfigError(f"{where}: [firewall] takes one field, 'ports'")
    raw = table.get("ports")
    if raw is None:
        return DEFAULT_FIREWALL_PORTS
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{where}: [firewall] ports must be a list of ports or 'low-high'")
    out: list[PortRange] = []
    for v in raw:
        # Each number through the one checker first ("²", true, 22.0); the grammar is
        # parse_port_spec's, which is left to refuse a range that runs backwards.
        for part in v.strip().split("-", 1) if isinstance(v, str) else (v,):
            config_port(
                part, where, "[firewall] ports", what="ports in 1..65535 or 'low-high' ranges"
            )
        got = parse_port_spec(v)
        if got is None:
            raise ConfigError(f"{where}: [firewall] ports: bad port {v!r} (1..65535 or 'low-high')")
        out.append(got)
    return tuple(out)


def _hosts_from_table(
    raw: Mapping[str, Any], where: str, max_hosts: int | None, common: Expect | None = None
) -> list[HostConfig]:
    name_expr = raw.get("name")
    unknown = set(raw) - _HOST_KEYS
    if unknown:
        if isinstance(name_expr, str) and name_expr:
            where = f"{where.split(': host #')[0]}: host {name_expr!r}"
        raise ConfigError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    if not isinstance(name_expr, str) or not name_expr:
        raise ConfigError(f"{where}: field 'name' is required (a host name or hostlist)")
    out: list[HostConfig] = []
    for name in expand(name_expr, where, max_hosts):
        w = f"{where.split(': host #')[0]}: host {name!r}"
        _check_name(name, w)
        ssh = raw.get("ssh")
        target: SshTarget | None = None
        if ssh is not None:
            if not isinstance(ssh, str):
                raise ConfigError(f"{w}: field 'ssh' must be a string like admin@node1:22")
            if ssh != LOCAL:
                target = parse_target(ssh.replace("{name}", name), f"{w}: field 'ssh'")
        # sysfs, path and interfaces go to the probe: checked here by the probe's own
        # rules, so a config that loads is one the probe runs.
        path = _str_list(raw.get("path", list(DEFAULT_PATH)), w, "path")
        for d in path:
            _probe_check(w, "path", ProbeArgs(path=(d,)))
        sysfs = raw.get("sysfs", "/sys")
        if not isinstance(sysfs, str):
            raise ConfigError(f"{w}: field 'sysfs' must be an absolute path, got {sysfs!r}")
        _probe_check(w, "sysfs", ProbeArgs(sysfs=sysfs))
        ifaces_raw = raw.get("interfaces")
        ifaces: tuple[str, ...] | None = None
        if ifaces_raw is not None:
            ifaces = tuple(_str_list(ifaces_raw, w, "interfaces"))
            for n in ifaces:
                _probe_check(w, "interfaces", ProbeArgs(interfaces=(n,)))
        urls = tuple(_str_list(raw.get("inference", []), w, "inference"))
        for u in urls:
            check_metrics_url(u, f"{w}: field 'inference'")
        fw_sudo = raw.get("firewall_sudo", False)
        if not isinstance(fw_sudo, bool):
            raise ConfigError(f"{w}: field 'firewall_sudo' must be true or false")
        optics_sudo = raw.get("optics_sudo", False)
        if not isinstance(optics_sudo, bool):
            raise ConfigError(f"{w}: field 'optics_sudo' must be true or false")
        mlxlink = raw.get("optics_mlxlink", False)
        if not isinstance(mlxlink, bool):
            raise ConfigError(f"{w}: field 'optics_mlxlink' must be true or false")
        expect = common
        if "expect" in raw:
            own = parse_expect(raw["expect"], f"{w}: [host.expect]")
            expect = own.over(common) if common is not None else own
        rails = _rails(raw.get("rails", {}), w)
        probe = raw.get("probe", "auto")
        if probe not in PROBE_KINDS:
            raise ConfigError(
                f"{w}: field 'probe' must be one of {', '.join(map(repr, PROBE_KINDS))}, "
                f"got {probe!r}"
            )
        out.append(
            HostConfig(
                name=name,
                ssh=target,
                path=tuple(path),
                sysfs=sysfs,
                interfaces=ifaces,
                inference=urls,
                probe=probe,
                firewall_sudo=fw_sudo,
                optics_sudo=optics_sudo,
                optics_mlxlink=mlxlink,
                expect=expect,
                rails=rails,
            )
        )
    return out


MAX_RAIL = 63  # a node has at most a few dozen ports; a larger number is a typo


def _rails(raw: Any, where: str) -> dict[str, int]:
    """``rails = { eth0 = 0, mlx5_1 = 1 }``: interface names as the probe takes them."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: field 'rails' must be a table of interface = rail number")
    out: dict[str, int] = {}
    for name, rail in raw.items():
        iface, _, port = name.partition("/")  # an RDMA port: mlx5_0/1
        _probe_check(where, "rails", ProbeArgs(interfaces=(iface,)))
        if port and not (port.isdigit() and len(port) <= 3):
            raise ConfigError(f"{where}: rails.{name}: an RDMA port is device/number")
        if isinstance(rail, bool) or not isinstance(rail, int) or not 0 <= rail <= MAX_RAIL:
            raise ConfigError(f"{where}: rails.{name}: a rail is a whole number 0..{MAX_RAIL}")
        out[name] = rail
    return out


def _str_list(val: Any, where: str, key: str) -> list[str]:
    if isinstance(val, str):
        val = [val]
    if not isinstance(val, list) or not all(isinstance(x, str) for x in val):
        raise ConfigError(f"{where}: field {key!r} must be a string or a list of strings")
    return list(val)


def check_metrics_url(url: str, where: str) -> tuple[str, int, str]:
    """Validate an inference /metrics URL; return (host, port, path) as seen from the node."""
    if len(url) > _MAX_URL:
        raise ConfigError(f"{where}: URL {url[:60]!r}... is longer than {_MAX_URL} characters")
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ConfigError(f"{where}: bad URL {url!r}") from None
    if parts.scheme != "http" or not parts.hostname:
        raise ConfigError(f"{where}: {url!r} is not an http://host:port/path URL")
    # The port as written, after the last "]" of an IPv6 address (urlsplit's own reading
    # took Unicode digits before Python 3.11.4).
    _, colon, port_text = parts.netloc.rpartition("@")[2].rpartition("]")[2].rpartition(":")
    port = config_port(port_text, where, f"port in {url!r}") if colon and port_text else 80
    if parts.query or parts.fragment or parts.username is not None:
        raise ConfigError(
            f"{where}: {url!r}: want http://host:port/path, without user, query or fragment"
        )
    if not re.match(r"^[A-Za-z0-9_.:-]+$", parts.hostname):
        raise ConfigError(f"{where}: bad host in {url!r}")
    path = parts.path or "/metrics"
    if not re.match(r"^/[A-Za-z0-9_./-]*$", path):
        raise ConfigError(f"{where}: bad path in {url!r}")
    return parts.hostname, port, path
