"""linkcheck.yaml and --node options: which two nodes, how to reach them, and local rule tuning.

Read into a msgspec model (linkcheck/schema.py) that refuses unknown keys: an unknown key, a wrong type or a value
out of range names file:line and what is allowed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType
from msgspec.structs import replace

from linkcheck import schema
from linkcheck.cluster.facts import ExpectedCluster
from linkcheck.cluster.hosts import NODE_NAME_RE, PAIR_NODES, ClusterHost, checked_hosts, node_target
from linkcheck.errors import ConfigError
from linkcheck.facts.model import ExpectedLink, ExpectedPath
from linkcheck.transport.base import NodeTarget, parse_node_target
from linkcheck.yamlfile import line_of, parse_yaml_text, read_yaml_text

DEFAULT_PATH = Path("linkcheck.yaml")
CONFIG_VERSION = 1
MAX_TIMEOUT_S = 86400  # a day: a timeout longer than that is a typo, and inf or nan would never end a wait
Seconds = Annotated[float, msgspec.Meta(gt=0, le=MAX_TIMEOUT_S)]


class SshOptions(msgspec.Struct, frozen=True):
    """How to reach the nodes; strict host keys unless the user opts in."""

    known_hosts: Path | None = None
    config: Path | None = None
    connect_timeout_s: float = 10.0
    command_timeout_s: int = 20
    inspection_timeout_s: float = 90.0
    accept_new_host_keys: bool = False


class Config(msgspec.Struct, frozen=True):
    """The resolved configuration of one run."""

    nodes: dict[str, NodeTarget]
    ssh: SshOptions = msgspec.field(default_factory=SshOptions)
    expected_link: ExpectedLink | None = None
    playbooks: tuple[Path, ...] = ()
    thresholds: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    source: str | None = None
    cluster_nodes: tuple[NodeTarget, ...] = ()  # the `cluster:` section's nodes, in its order
    expected_cluster: ExpectedCluster | None = None  # the cabling `init` recorded over a cluster

    @property
    def expected_paths(self) -> tuple[tuple[str, str], ...]:
        return tuple((p.a, p.b) for p in self.expected_link.paths) if self.expected_link else ()


ContainerName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")]


class _Node(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    target: str
    identity_file: str | None = None
    containers: tuple[ContainerName, ...] = ()


class _Nodes(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    a: str | _Node | UnsetType = UNSET
    b: str | _Node | UnsetType = UNSET


class _Ssh(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    known_hosts: str | None = None
    config: str | None = None
    connect_timeout_s: Seconds = 10.0
    command_timeout_s: Seconds = 20.0
    inspection_timeout_s: Seconds = 90.0
    accept_new_host_keys: bool = False


class _Path(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    a: str
    b: str
    subnet: str | None = None


class _Link(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    cage: str | None = None
    paths: tuple[_Path, ...] = ()


CableKey = Annotated[str, msgspec.Meta(pattern=r"^[^\s:<>]+:[^\s:<>]+<->[^\s:<>]+:[^\s:<>]+\Z")]
NodeName = Annotated[str, msgspec.Meta(pattern=NODE_NAME_RE.pattern)]


class _Cluster(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    nodes: dict[NodeName, str | _Node] = msgspec.field(default_factory=dict)
    cables: tuple[CableKey, ...] = ()
    switch: tuple[NodeName, ...] = ()


class _File(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """linkcheck.yaml as written; `load_config` turns it into a Config."""

    version: Literal[1] = 1
    nodes: _Nodes = _Nodes()
    ssh: _Ssh = _Ssh()
    link: _Link | None = None
    playbooks: tuple[str, ...] = ()
    thresholds: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    cluster: _Cluster | None = None


_SECONDS = f"a positive number of seconds, at most {MAX_TIMEOUT_S}"
_NODE = "[user@]host[:port], or {target: [user@]host[:port], identity_file: path, containers: [name, ...]}"
_CONTAINERS = "a list of container names (letters, digits, _ . -, starting with a letter or digit)"
_PATH = "{a: netdev, b: netdev, subnet: CIDR}"
_ALLOWED = {
    "nodes": "a mapping of a and b", "nodes.a": _NODE, "nodes.b": _NODE, "nodes.a.target": _NODE,
    "nodes.b.target": _NODE, "nodes.a.identity_file": "a file path", "nodes.b.identity_file": "a file path",
    "nodes.a.containers": _CONTAINERS, "nodes.b.containers": _CONTAINERS,
    "nodes.a.containers[]": _CONTAINERS, "nodes.b.containers[]": _CONTAINERS,
    "cluster.nodes.*.containers": _CONTAINERS, "cluster.nodes.*.containers[]": _CONTAINERS,
    "ssh": "a mapping", "ssh.known_hosts": "a file path", "ssh.config": "a file path",
    "ssh.connect_timeout_s": _SECONDS, "ssh.command_timeout_s": _SECONDS, "ssh.inspection_timeout_s": _SECONDS,
    "ssh.accept_new_host_keys": "true or false", "link": "a mapping of cage and paths",
    "link.cage": "a cage name such as p1", "link.paths": f"a list of {_PATH}", "link.paths[]": _PATH,
    "link.paths[].a": "a netdev name", "link.paths[].b": "a netdev name",
    "link.paths[].subnet": "a CIDR such as 192.168.100.0/24", "playbooks": "a list of file or folder paths",
    "playbooks[]": "a file or folder path", "thresholds": "a mapping of rule ids to {name: value}",
    "thresholds.*": "a mapping of threshold names to values",
    "cluster": "a mapping of nodes, cables and switch", "cluster.nodes": "a mapping of node names to " + _NODE,
    "cluster.nodes.*": _NODE, "cluster.cables": "a list of cables such as a:p0<->b:p1",
    "cluster.cables[]": "a cable such as a:p0<->b:p1 (node:cage<->node:cage)",
    "cluster.switch": "a list of node names", "cluster.switch[]": "a node name (letters, digits, . _ -)",
}


def _allowed(where: str) -> str | None:
    where = re.sub(r"\[\d+\]", "[]", where)
    if where.endswith("*"):  # the keys of a mapping: the model's fields
        names = schema.field_names(_File, _steps(where[:-2]) if where != "*" else ())
        return ", ".join(names) if names else None
    return (_ALLOWED.get(where) or _ALLOWED.get(re.sub(r"^thresholds\.[^.]+$", "thresholds.*", where))
            or _ALLOWED.get(re.sub(r"^cluster\.nodes\.[^.]+$", "cluster.nodes.*", where)))


def _steps(where: str) -> tuple[str | int, ...]:
    return tuple(0 if part == "[]" else part for part in re.findall(r"[^.\[]+|\[\]", where))


def _refusal(path: Path, data: Any, exc: msgspec.ValidationError) -> ConfigError:
    problem = schema.locate(exc)
    value, _, _ = schema.value_at(data, problem.steps)
    if problem.steps == ("version",):
        reason = f"version {value!r} is not supported (this linkcheck reads version {CONFIG_VERSION})"
    else:
        reason = schema.describe(problem, value, _allowed)
    return ConfigError(str(path), reason, line=schema.yaml_line(data, problem))


def _node(path: Path, data: Any, name: str, raw: str | _Node | UnsetType) -> NodeTarget | None:
    if isinstance(raw, UnsetType):
        return None
    node = _Node(target=raw) if isinstance(raw, str) else raw
    identity = _path(node.identity_file)
    try:
        return replace(parse_node_target(node.target, name=name, identity_file=str(identity) if identity else None),
                       containers=node.containers)
    except ConfigError as exc:
        where = data["nodes"][name]
        raise ConfigError(str(path), exc.reason, line=line_of(where, "target") or line_of(data["nodes"], name)) \
            from None


def _path(value: str | None) -> Path | None:
    return Path(value).expanduser() if value else None


def load_config(path: Path) -> Config:
    """Read linkcheck.yaml into its model; any mistake is one ConfigError naming file:line."""
    data = parse_yaml_text(read_yaml_text(path, ConfigError), str(path), ConfigError)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(str(path), "expected a mapping with 'nodes'", line=1)
    try:
        doc = msgspec.convert(data, _File)
    except msgspec.ValidationError as exc:
        raise _refusal(path, data, exc) from None
    nodes = {name: target for name in ("a", "b")
             if (target := _node(path, data, name, getattr(doc.nodes, name))) is not None}
    link = None
    if doc.link is not None:  # the `link:` section that `init` wrote: the cabled cage and the paths
        # The file name, not the path: the same config read from another folder gives the same findings.
        link = ExpectedLink(cage=None if doc.link.cage in (None, "none") else doc.link.cage,
                            paths=tuple(ExpectedPath(p.a, p.b, p.subnet) for p in doc.link.paths),
                            source=path.name)
    ssh = SshOptions(known_hosts=_path(doc.ssh.known_hosts), config=_path(doc.ssh.config),
                     connect_timeout_s=doc.ssh.connect_timeout_s, command_timeout_s=int(doc.ssh.command_timeout_s),
                     inspection_timeout_s=doc.ssh.inspection_timeout_s,
                     accept_new_host_keys=doc.ssh.accept_new_host_keys)
    cluster_nodes, expected_cluster = _cluster(path, data, doc.cluster)
    # The thresholds stay the loader's LineDicts, so an unknown rule or a bad override can still name its line.
    return Config(nodes=nodes, ssh=ssh, expected_link=link,
                  playbooks=tuple(path.parent / Path(p).expanduser() for p in doc.playbooks),
                  thresholds=data.get("thresholds") or {}, source=str(path), cluster_nodes=cluster_nodes,
                  expected_cluster=expected_cluster)


def _cluster(path: Path, data: Any, section: _Cluster | None) -> tuple[tuple[NodeTarget, ...], ExpectedCluster | None]:
    """The `cluster:` section `init` writes over a cluster: its nodes (targets parsed as --node's) and the cabling
    it recorded, which a later `topology` or `check` compares (LINK_CHANGED)."""
    if section is None:
        return (), None
    hosts = []
    for name, raw in section.nodes.items():
        node = _Node(target=raw) if isinstance(raw, str) else raw
        identity = _path(node.identity_file)
        line = line_of(data["cluster"]["nodes"], name)
        # The checks every host source gets: the node's name, its address, and no address named twice.
        target = replace(node_target(str(path), line, name, node.target, str(identity) if identity else None),
                         containers=node.containers)
        hosts.append(ClusterHost(target, f"{path}:{line}" if line else str(path)))
    targets = [host.target for host in checked_hosts(str(path), hosts)]
    unknown = [n for n in section.switch if section.nodes and n not in section.nodes]
    if unknown:
        raise ConfigError(str(path), f"cluster.switch names {unknown[0]!r}, which is not among cluster.nodes",
                          line=line_of(data["cluster"], "switch"))
    return tuple(targets), ExpectedCluster(section.cables, section.switch, path.name)




def parse_node_options(options: list[str]) -> dict[str, NodeTarget]:
    """--node a=user@host --node b=user@host."""
    nodes: dict[str, NodeTarget] = {}
    for option in options:
        name, sep, target = option.partition("=")
        if not sep or name not in PAIR_NODES or not target:
            raise ConfigError("--node", f"expected a=[user@]host[:port] or b=..., got {option!r}")
        nodes[name] = parse_node_target(target, name=name)
    return nodes


def default_config_present() -> bool:
    """./linkcheck.yaml is there, whatever it is: a FIFO, a device, a folder or a dangling link in its place is
    refused by `load_config` (exit 4) like the same given with -c, not silently run without."""
    return os.path.lexists(DEFAULT_PATH)


def find_config(config_path: Path | None) -> Config | None:
    """The config a command uses: the given file, else ./linkcheck.yaml when present, else none."""
    path = config_path or (DEFAULT_PATH if default_config_present() else None)
    return load_config(path) if path else None


def resolve_config(config_path: Path | None, node_options: list[str]) -> Config:
    """The config file (if given or present) with --node options taking precedence."""
    return resolve_pair(find_config(config_path), node_options)


def resolve_pair(found: Config | None, node_options: list[str]) -> Config:
    """The pair's nodes a and b: linkcheck.yaml as found (`found`), with --node a=/b= options taking precedence."""
    config = found or Config(nodes={})
    overrides = parse_node_options(node_options)
    for name, target in overrides.items():
        # --node changes where a node is; the key named for it in linkcheck.yaml still applies.
        old = config.nodes.get(name)
        if old is not None and target.identity_file is None and old.identity_file:
            overrides[name] = replace(target, identity_file=old.identity_file)
        if old is not None:  # its containers too
            overrides[name] = replace(overrides[name], containers=old.containers)
    nodes = {**config.nodes, **overrides}
    missing = [n for n in PAIR_NODES if n not in nodes]
    if missing and config.cluster_nodes:  # a cluster's file: never two of its nodes taken for the pair
        raise ConfigError(config.source or "linkcheck.yaml", f"this command serves a pair; the file names a cluster "
                          f"of {len(config.cluster_nodes)} nodes (its cluster: section)",
                          fix="name the pair with --node a=user@host --node b=user@host; `check`, `accept` and "
                          "`topology` take the cluster")
    if missing:
        raise ConfigError(config.source or "--node", f"node {missing[0]} is not configured",
                          fix="pass --node a=user@host --node b=user@host, or run `linkcheck init`")
    return Config(nodes=nodes, ssh=config.ssh, expected_link=config.expected_link, playbooks=config.playbooks,
                  thresholds=config.thresholds, source=config.source)
