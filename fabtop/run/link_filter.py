"""The filter language of the dashboard's ``/`` and ``--filter``: which links to show.

Terms are separated by spaces and all must hold. A term is free text (found in the host,
the link's name, its kind or link layer) or ``field:value``:

- ``host:node1[0-9]``: the host, as a hostlist expression (``node[01-04]``, ``a,b``);
- ``rail:0``: the link's rail, numbered as ``fabtop test`` numbers them;
- ``kind:roce``: ``roce``, ``ib``, ``tb`` (Thunderbolt), ``netdev``, ``virtual``;
- ``state:down``: the link's state (``up``, ``down``...) or its host's (``stale``,
  ``down``, ``failing``, ``connecting``);
- ``rule:pfc_storm``: a finding of that rule on the link or its host;
- ``sev:warning``: a finding of at least that severity (``info``, ``warning``,
  ``critical``) on the link or its host.

``!`` before a term inverts it (``!kind:virtual``, ``!node3``). A bad term is one line
naming it; the dashboard keeps the filter it had.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from fabtop.config import ConfigError, expand
from fabtop.core.findings import SEVERITIES

FIELDS = ("host", "rail", "kind", "state", "rule", "sev")
KINDS = ("roce", "ib", "tb", "netdev", "virtual")
# A filter is typed by a person: a longer one is a paste gone wrong.
MAX_TEXT = 512
MAX_HOSTS = 65536


class FilterError(ValueError):
    """A filter that cannot be read: the message names the term."""


@dataclass(frozen=True, slots=True)
class LinkFacts:
    """What a filter looks at on one link (the dashboard makes these from its rows)."""

    host: str
    link: str
    kind: str
    link_layer: str | None = None
    state: str | None = None  # the link's
    host_state: str | None = None
    rail: int | None = None
    rules: frozenset[str] = frozenset()
    severity: str | None = None  # the worst finding's on the link or its host

    def text(self) -> str:
        return f"{self.host} {self.link} {self.kind} {self.link_layer or ''}".lower()


@dataclass(frozen=True, slots=True)
class Term:
    field: str  # "" for free text
    value: str
    negate: bool = False
    hosts: frozenset[str] = frozenset()

    def holds(self, f: LinkFacts) -> bool:
        return self._holds(f) != self.negate

    def _holds(self, f: LinkFacts) -> bool:
        v = self.value
        if self.field == "":
            return v in f.text()
        if self.field == "host":
            return f.host in self.hosts
        if self.field == "rail":
            return f.rail is not None and str(f.rail) == v
        if self.field == "kind":
            return f.kind == v
        if self.field == "state":
            return v in ((f.state or "").lower(), (f.host_state or "").lower())
        if self.field == "rule":
            return v in f.rules
        # sev: at least that severity
        return f.severity is not None and SEVERITIES.index(f.severity) >= SEVERITIES.index(v)


@dataclass(frozen=True, slots=True)
class LinkFilter:
    """A parsed filter; the empty one shows every link."""

    text: str = ""
    terms: tuple[Term, ...] = field(default_factory=tuple)

    def __bool__(self) -> bool:
        return bool(self.terms)

    def holds(self, f: LinkFacts) -> bool:
        return all(t.holds(f) for t in self.terms)

    def needs_findings(self) -> bool:
        return any(t.field in ("rule", "sev") for t in self.terms)

    def needs_rails(self) -> bool:
        return any(t.field == "rail" for t in self.terms)


def _term(word: str) -> Term:
    negate = word.startswith("!")
    body = word[1:] if negate else word
    if not body:
        raise FilterError(f"filter: '{word}' inverts nothing (write !TERM)")
    name, sep, value = body.partition(":")
    if not sep:
        return Term("", body.lower(), negate)
    name = name.lower()
    if name not in FIELDS:
        raise FilterError(
            f"filter: unknown field '{name}' in '{word}' (fields: {', '.join(FIELDS)})"
        )
    if not value:
        raise FilterError(f"filter: '{word}' has no value")
    if name == "host":
        try:
            hosts = frozenset(expand(value, f"filter: '{word}'", MAX_HOSTS))
        except ConfigError as e:
            raise FilterError(str(e)) from None
        return Term(name, value, negate, hosts)
    value = value.lower()
    if name == "rail" and not (value.isascii() and value.isdigit() and len(value) <= 4):
        raise FilterError(f"filter: rail must be a number in '{word}'")
    if name == "kind" and value not in KINDS:
        raise FilterError(f"filter: kind must be one of {', '.join(KINDS)} in '{word}'")
    if name == "sev" and value not in SEVERITIES:
        raise FilterError(f"filter: sev must be one of {', '.join(SEVERITIES)} in '{word}'")
    return Term(name, value, negate)


def parse(text: str) -> LinkFilter:
    """The filter ``text`` says; FilterError (one line naming the term) when it cannot be
    read."""
    if len(text) > MAX_TEXT:
        raise FilterError(f"filter: longer than {MAX_TEXT} characters")
    if not text.isprintable():
        raise FilterError("filter: has a control character")
    words = text.split()
    return LinkFilter(" ".join(words), tuple(_term(w) for w in words))


def matching(flt: LinkFilter, facts: Iterable[LinkFacts]) -> list[LinkFacts]:
    """The links ``flt`` shows, in the order given."""
    return [f for f in facts if flt.holds(f)]
