"""``doctor --write-expect FILE`` and ``doctor --expect FILE``: expectations as files.

``--write-expect`` writes the fabric as doctor saw it as a config: the hosts as they were
given, the values every host shares in ``[expect]``, and ``[host.expect]`` only where a
host differs. It loads back with :func:`fabtop.config.load_config`, and doctor on the
same fabric then passes. ``--expect`` takes the expectations of such a file (or one of
``[expect]`` alone) for hosts given another way (the command line, ``--demo``).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from fabtop.config import (
    DEFAULT_PATH,
    Config,
    ConfigError,
    HostConfig,
    load_config,
    parse_expect,
    read_toml,
)
from fabtop.core.expect import (
    FIELD_NAMES,
    LINK_LAYERS,
    PORT_FIELDS,
    Found,
    gpu_count,
    port_values,
    rdma_ports,
)
from fabtop.core.firewall_ports import DEFAULT_FIREWALL_PORTS, port_text
from fabtop.core.rules.context import is_rdma_ethernet
from fabtop.core.state import NOT_REPORTING, FabricState, HostState
from fabtop.run.outputs import STDOUT, OutputError, resolve

# A host whose RDMA ports cannot disagree with a per-port field: it has none (its
# ``rdma_ports = 0`` is what is checked).
_ANY = object()


def refuse_existing(path: str, force: bool) -> None:
    """OutputError, before doctor's window, when ``path`` cannot take the file: it exists
    (a link too, dangling or not) and ``force`` is off, it is stdout (doctor's findings
    go there), or its directory is not there."""
    if path == STDOUT:
        raise OutputError("--write-expect -: wants a file (doctor prints its findings on stdout)")
    if not force and os.path.lexists(path):
        raise OutputError(f"{path}: exists; pass --force to overwrite it")
    target, _ = resolve(path, "expectations")  # a directory, a loop of links
    if not target.parent.is_dir():
        raise OutputError(f"{path}: cannot write expectations: no directory {str(target.parent)!r}")


def observed(hs: HostState) -> dict[str, object] | None:
    """What one host has of each ``[expect]`` field (None: host not read). A field left
    out could not be read, or has no one value (ports that disagree)."""
    s = hs.sample
    if s is None or hs.status in NOT_REPORTING:
        return None
    ports = rdma_ports(s)
    out: dict[str, object] = {"rdma_ports": len(ports)}
    for name in PORT_FIELDS:
        if not ports:
            out[name] = _ANY
            continue
        seen = {port_values(p)[name] for p in ports}
        if name == "lossless_priority":
            roce = [p for p in ports if is_rdma_ethernet(p)]
            if not roce:
                out[name] = _ANY  # InfiniBand: no PFC to expect
                continue
            seen = {port_values(p)[name] for p in roce}
        if name == "link_layer" and not seen <= set(LINK_LAYERS):
            continue  # a layer [expect] cannot name (macOS over Thunderbolt)
        if len(seen) == 1 and None not in seen:
            out[name] = seen.pop()
    n, _ = gpu_count(hs, s)
    if n is not None:
        out["gpus"] = n
    if any(i.error is None for i in s.inference):
        out["inference"] = True
    return out


def expectations(
    state: FabricState,
) -> tuple[dict[str, Found], dict[str, dict[str, Found]], list[str]]:
    """(common ``[expect]``, per-host overrides, hosts not read) of the fabric as it is.

    A field goes in ``[expect]`` when every host that was read has a value for it (the
    most common value; the others override it); else only in the overrides of the hosts
    that have one. ``inference`` is only ever written true (false requires nothing).
    """
    seen: dict[str, dict[str, object]] = {}
    unread: list[str] = []
    for name, hs in state.hosts.items():
        got = observed(hs)
        if got is None:
            unread.append(name)
        else:
            seen[name] = got
    common: dict[str, Found] = {}
    own: dict[str, dict[str, Found]] = {n: {} for n in seen}
    for field in FIELD_NAMES:
        values = {n: v[field] for n, v in seen.items() if field in v and v[field] is not _ANY}
        if not values:
            continue
        free = all(field in v for v in seen.values())
        top = Counter(values.values()).most_common(1)[0][0] if free else None
        if field == "inference":
            top = None
        if top is not None:
            common[field] = top  # type: ignore[assignment]
        for n, v in values.items():
            if v != top:
                own[n][field] = v  # type: ignore[assignment]
    return common, {n: o for n, o in own.items() if o}, unread


def _toml(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a TOML basic string
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    raise TypeError(f"no TOML for {type(v).__name__}")


def _table(lines: list[str], values: Mapping[str, object]) -> None:
    lines += [f"{k} = {_toml(v)}" for k, v in values.items()]


def _host_fields(h: HostConfig) -> dict[str, object]:
    out: dict[str, object] = {"name": h.name}
    if h.ssh is not None:
        out["ssh"] = str(h.ssh)
    if h.path != DEFAULT_PATH:
        out["path"] = list(h.path)
    if h.sysfs != "/sys":
        out["sysfs"] = h.sysfs
    if h.interfaces is not None:
        out["interfaces"] = list(h.interfaces)
    if h.inference:
        out["inference"] = list(h.inference)
    if h.probe != "auto":
        out["probe"] = h.probe
    if h.firewall_sudo:
        out["firewall_sudo"] = True
    if h.optics_sudo:
        out["optics_sudo"] = True
    if h.optics_mlxlink:
        out["optics_mlxlink"] = True
    return out


def render(config: Config, state: FabricState) -> tuple[str, list[str]]:
    """The config text of the fabric as it is, and the hosts that were not read."""
    common, own, unread = expectations(state)
    lines = [
        "# fabtop config written by `fabtop doctor --write-expect`: the hosts as they were",
        "# given and what each had. [expect] holds what all hosts share, [host.expect] where",
        "# a host differs (its fields over [expect]). Edit it to what the fabric must have.",
    ]
    if unread:
        lines.append(f"# Not read, so given the common [expect]: {', '.join(unread)}.")
    top: dict[str, object] = {}
    if config.interval != 1.0:
        top["interval"] = config.interval
    if config.known_hosts:
        top["known_hosts"] = config.known_hosts
    if config.ssh_config:
        top["ssh_config"] = config.ssh_config
    if top:
        lines.append("")
        _table(lines, top)
    if config.thresholds:
        lines += ["", "[thresholds]"]
        _table(lines, config.thresholds)
    if config.firewall_ports != DEFAULT_FIREWALL_PORTS:
        ports = [p[0] if p[0] == p[1] else port_text(p) for p in config.firewall_ports]
        lines += ["", "[firewall]", f"ports = {_toml(ports)}"]
    lines += ["", "[expect]"]
    _table(lines, common)
    for h in config.hosts:
        lines += ["", "[[host]]"]
        _table(lines, _host_fields(h))
        if own.get(h.name):
            lines.append("[host.expect]")
            _table(lines, own[h.name])
    return "\n".join(lines) + "\n", unread


def load_expect_file(path: str, config: Config) -> None:
    """Give ``config``'s hosts the expectations of ``path`` (``--expect``).

    ``path``: a fabtop config (its ``[expect]``, and each ``[[host]]``'s own, matched by
    name), or a file of ``[expect]`` alone. A host the file does not name gets its
    ``[expect]``. ConfigError naming the file and the field.
    """
    p = Path(path)
    data = read_toml(p)
    if "host" in data:
        loaded = load_config(p, max_hosts=None)
        common, by_name = loaded.expect, {h.name: h.expect for h in loaded.hosts}
    elif set(data) == {"expect"}:
        common, by_name = parse_expect(data["expect"], f"{path}: [expect]"), {}
    else:
        raise ConfigError(f"{path}: want a fabtop config or a file of [expect] alone")
    if common is None and not any(by_name.values()):
        raise ConfigError(f"{path}: no [expect] table")
    config.expect = common
    for h in config.hosts:
        h.expect = by_name.get(h.name, common)
