"""Where the nodes of a cluster are: repeated `--node`, an OpenMPI hostfile, an Ansible inventory (INI or YAML) or
Slurm's `$SLURM_JOB_NODELIST`; and the nodes a saved bundle names.

linkcheck depends on none of those tools: each source is parsed here from its text. One source per run; a node
named twice, or two names for one address, is refused, since a node takes part in at most one test at a time and
two names for it would put it in two. Every refusal is a ConfigError naming the source (file:line where there is
one), printed as one line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import msgspec

from linkcheck.bundle.run_record import ClusterDocument, is_cluster_bundle, load_cluster
from linkcheck.cluster.hostlist import MAX_HOSTS, HostRangeError, expand_hostlist
from linkcheck.cluster.inventory import InventoryHost, parse_inventory
from linkcheck.errors import ConfigError
from linkcheck.integers import NumberError, ascii_int, bounded_int, quoted
from linkcheck.model import MAX_NODES, Capture
from linkcheck.safe_read import read_capped
from linkcheck.transport.base import NodeTarget, parse_node_target, parse_target

PAIR_NODES = ("a", "b")  # the pair's own nodes, as --node a=... --node b=... and linkcheck.yaml's `nodes:` name them
MAX_HOST_FILE_BYTES = 1 << 20
SLURM_VAR = "SLURM_JOB_NODELIST"
# A node's name ends up in captures, bundle folders and messages: a host name's characters, no path parts.
# `\Z`, not `$`: `$` also matches before a final newline, and "spark-1\n" is no host name.
NODE_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}\Z")
MAX_SLOTS = 1024  # Open MPI's slots per host; a GB10 has one GPU and 20 cores, so more is a typo
# Open MPI's hostfile keywords (orte/prrte hostfile lexer): counts, and the user name the ssh launcher uses.
_COUNT_KEYS = frozenset({"slots", "slot", "count", "cpu", "max_slots", "max-slots", "maxslots"})
_USER_KEYS = frozenset({"username", "user", "user_name"})


class ClusterHost(msgspec.Struct, frozen=True):
    """One node of the cluster: how to reach it, and where it was named (for messages)."""

    target: NodeTarget
    origin: str  # "--node", "hosts:3", "$SLURM_JOB_NODELIST"
    slots: int | None = None  # an Open MPI hostfile's slots=N, when given

    @property
    def name(self) -> str:
        return self.target.name


def _refuse(source: str, reason: str, line: int | None = None, fix: str | None = None) -> ConfigError:
    return ConfigError(source, reason, line=line, fix=fix)


def node_target(source: str, line: int | None, name: str, text: str,
                identity_file: str | None = None) -> NodeTarget:
    """parse_node_target, with its refusal re-said at the source's file:line and the node's name checked: the one
    check of a node's name and address, whichever source (--node, hostfile, inventory, Slurm, linkcheck.yaml)
    named it."""
    if not NODE_NAME_RE.match(name):
        raise _refuse(source, f"bad node name {quoted(name)} (letters, digits, '_', '.', '-'; give name=[addr] for "
                      "an IPv6 address)", line)
    try:
        return parse_node_target(text, name=name, identity_file=identity_file)
    except ConfigError as exc:
        raise _refuse(source, exc.reason, line) from None


def _target_text(host: str, user: str | None, port: int | None) -> str:
    shown = f"[{host}]" if ":" in host and port is not None else host
    return f"{user + '@' if user else ''}{shown}{':' + str(port) if port is not None else ''}"


def parse_node_values(values: Sequence[str]) -> tuple[ClusterHost, ...]:
    """`--node` values: `name=[user@]host[:port]`, or `[user@]host[:port]` named after its host.

    >>> [str(h.target) for h in parse_node_values(["s1=nv@spark-1", "spark-2:2222"])]
    ['nv@spark-1', 'spark-2:2222']
    """
    hosts = []
    for value in values:
        name, sep, text = value.partition("=")
        if not sep:
            text = value
            probe = parse_node_target(value, name="?") if value.strip() else None
            name = probe.host if probe is not None else ""
        if not text.strip():
            raise _refuse("--node", f"expected name=[user@]host[:port] or [user@]host[:port], got {value!r}")
        hosts.append(ClusterHost(node_target("--node", None, name, text), "--node"))
    return checked_hosts("--node", hosts)


def parse_hostfile(text: str, source: str) -> tuple[ClusterHost, ...]:
    """An Open MPI hostfile: `[user@]host [slots=N] [max_slots=N]` per line, `#` comments, blank lines; a host
    named on two lines is one node (Open MPI adds up its slots).

    >>> [(h.name, h.slots) for h in parse_hostfile("# sparks\\nspark-1 slots=1\\nspark-2\\n", "hosts")]
    [('spark-1', 1), ('spark-2', None)]
    """
    hosts: dict[str, ClusterHost] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        first, *options = line.split()
        user, slots = _hostfile_options(source, number, options)
        if "@" in first:
            user, first = first.rsplit("@", 1)
        host = ClusterHost(node_target(source, number, first, _target_text(first, user, None)), f"{source}:{number}",
                           slots)
        old = hosts.get(first)
        if old is not None:
            if old.target.user != host.target.user:
                raise _refuse(source, f"host {first} is named again with another user (first at {old.origin})",
                              number)
            total = None if old.slots is None and slots is None else (old.slots or 0) + (slots or 0)
            if total is not None and total > MAX_SLOTS:
                raise _refuse(source, f"host {first} has {total} slots in all, more than {MAX_SLOTS}", number)
            host = msgspec.structs.replace(old, slots=total)
        hosts[first] = host
    return checked_hosts(source, list(hosts.values()))


def _hostfile_options(source: str, number: int, options: list[str]) -> tuple[str | None, int | None]:
    """The user and the slot count of one hostfile line; max_slots is checked, not kept."""
    user: str | None = None
    counts: dict[str, int] = {}
    for option in options:
        key, sep, value = option.partition("=")
        key = key.lower()
        if not sep or not value:
            raise _refuse(source, f"expected keyword=value after the host, got {option!r}", number)
        if key in _USER_KEYS:
            user = value
        elif key in _COUNT_KEYS:
            try:
                counts["max" if key.startswith("max") else "slots"] = bounded_int(value, 1, MAX_SLOTS, key)
            except NumberError:
                raise _refuse(source, f"{key}={quoted(value)}: a count of at least 1 and at most {MAX_SLOTS} is "
                              "needed (ASCII digits)", number) from None
        else:
            raise _refuse(source, f"unknown hostfile keyword {key!r} (slots, max_slots, username)", number)
    if "max" in counts and counts.get("slots", 1) > counts["max"]:
        raise _refuse(source, f"slots={counts['slots']} is more than max_slots={counts['max']}", number)
    return user, counts.get("slots")


def hosts_from_inventory(found: Sequence[InventoryHost], source: str) -> tuple[ClusterHost, ...]:
    """Cluster hosts for an inventory's hosts: the inventory name is the node's name."""
    hosts = [ClusterHost(node_target(source, h.line, h.name, _target_text(h.host, h.user, h.port),
                                 str(Path(h.identity_file).expanduser()) if h.identity_file else None),
                         f"{source}:{h.line}") for h in found]
    return checked_hosts(source, hosts)


def parse_slurm_nodelist(text: str, source: str = f"${SLURM_VAR}") -> tuple[ClusterHost, ...]:
    """Slurm's hostlist (`spark[01-04,07],other`), each name reached as itself."""
    try:
        names = expand_hostlist(text)
    except HostRangeError as exc:
        raise _refuse(source, str(exc)) from None
    return checked_hosts(source, [ClusterHost(node_target(source, None, n, n), source) for n in names])


def checked_hosts(source: str, hosts: list[ClusterHost]) -> tuple[ClusterHost, ...]:
    """The hosts, refused when a name or an address comes twice or there are too many."""
    if len(hosts) > MAX_HOSTS:
        raise _refuse(source, f"{len(hosts)} hosts, more than the {MAX_HOSTS} linkcheck takes")
    names: dict[str, ClusterHost] = {}
    places: dict[tuple[str, int | None], ClusterHost] = {}
    for host in hosts:
        where = _line(host.origin)
        if host.name in names:
            raise _refuse(source, f"node {host.name} is named twice (also at {names[host.name].origin})", where)
        place = (host.target.host.lower(), host.target.port)
        if place in places:
            raise _refuse(source, f"nodes {places[place].name} and {host.name} are the same address "
                          f"{_target_text(place[0], None, place[1])}", where)
        names[host.name] = places[place] = host
    return tuple(hosts)


def _line(origin: str) -> int | None:
    tail = origin.rsplit(":", 1)[-1]
    return None if ":" not in origin else ascii_int(tail, 1, 1 << 31)


def _read(path: Path) -> str:
    try:
        return read_capped(path, MAX_HOST_FILE_BYTES).decode("utf-8")
    except OSError as exc:
        raise _refuse(str(path), f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise _refuse(str(path), f"cannot read: {exc}") from None


def read_hostfile(path: Path) -> tuple[ClusterHost, ...]:
    return parse_hostfile(_read(path), str(path))


def read_inventory(path: Path, group: str | None = None) -> tuple[ClusterHost, ...]:
    return hosts_from_inventory(parse_inventory(_read(path), str(path), group), str(path))


def recorded_hosts(doc: ClusterDocument) -> tuple[ClusterHost, ...]:
    """The nodes a cluster's record (cluster.json) names, in its order, each from where it was named."""
    return tuple(ClusterHost(parse_target(h.target, name=h.name), h.origin or "the bundle") for h in doc.hosts)


def pair_names(nodes: Mapping[str, object], captures: Iterable[Capture]) -> tuple[str, ...]:
    """A pair's own bundle's (one without cluster.json) two nodes: its manifest's two where its captures are theirs,
    else a and b, as the pair's own run names them. The manifest's `nodes` and each capture's node are written apart:
    a manifest naming other nodes than its files do is no reason to judge files of nodes it does not name."""
    named = len(nodes) == 2 and {c.node for c in captures} <= set(nodes)
    return tuple(nodes) if named else PAIR_NODES


def saved_hosts(directory: Path, nodes: Mapping[str, Mapping[str, object]],
                captures: Iterable[Capture]) -> tuple[ClusterHost, ...]:
    """The nodes a saved bundle names, as the bundle says what it is: a cluster's as its cluster.json names them
    (their order and origin), a pair's as `pair_names` reads its manifest (`nodes`) beside its `captures`."""
    if is_cluster_bundle(directory):
        return recorded_hosts(load_cluster(directory))
    return tuple(ClusterHost(parse_target(str(nodes.get(name, {}).get("target") or name), name=name), "the bundle")
                 for name in pair_names(nodes, captures))


def _counted(source: str, hosts: tuple[ClusterHost, ...]) -> tuple[ClusterHost, ...]:
    """At least two nodes (a test joins two), at most MAX_NODES."""
    if len(hosts) < 2:
        raise _refuse(source, f"{len(hosts)} node given; a cluster needs 2 to {MAX_NODES}",
                      fix="name every node of the cluster (a pair: --node a=... --node b=...)")
    if len(hosts) > MAX_NODES:
        raise _refuse(source, f"{len(hosts)} nodes given; linkcheck checks at most {MAX_NODES}",
                      fix=f"check the cluster in parts of at most {MAX_NODES} nodes (--hostfile, --inventory --group)")
    return hosts


def cluster_hosts(*, nodes: Sequence[str] = (), hostfile: Path | None = None, inventory: Path | None = None,
                  group: str | None = None, environ: Mapping[str, str] | None = None,
                  configured: Sequence[NodeTarget] = ()) -> tuple[ClusterHost, ...]:
    """The nodes from the one source given: --node, --hostfile or --inventory, else linkcheck.yaml's `cluster:`
    nodes (`configured`), else $SLURM_JOB_NODELIST."""
    given = [name for name, present in (("--node", bool(nodes)), ("--hostfile", hostfile is not None),
                                         ("--inventory", inventory is not None)) if present]
    if len(given) > 1:
        raise _refuse(given[0], f"give the nodes one way, not {' and '.join(given)}")
    if group is not None and inventory is None:
        raise _refuse("--group", "a group selects hosts of an inventory: give --inventory too")
    if nodes:
        return _counted("--node", parse_node_values(nodes))
    if hostfile is not None:
        return _counted(str(hostfile), read_hostfile(hostfile))
    if inventory is not None:
        return _counted(str(inventory), read_inventory(inventory, group))
    if configured:
        source = "linkcheck.yaml cluster.nodes"
        return _counted(source, checked_hosts(source, [ClusterHost(target, source) for target in configured]))
    nodelist = (environ or {}).get(SLURM_VAR, "").strip()
    if nodelist:
        return _counted(f"${SLURM_VAR}", parse_slurm_nodelist(nodelist))
    raise _refuse("--node", "no nodes given", fix="name them with --node (repeated), --hostfile FILE, "
                  f"--inventory FILE, a linkcheck.yaml `cluster:` section (linkcheck init), or run inside a Slurm "
                  f"allocation (${SLURM_VAR})")
