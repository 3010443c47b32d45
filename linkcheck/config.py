"""linkcheck.yaml and --node options: which two nodes, how to reach them, and local rule tuning.

Validated strictly like playbooks: an unknown key or a wrong type names file:line and what was expected.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec.structs import replace

from linkcheck.errors import ConfigError
from linkcheck.facts.model import ExpectedLink, ExpectedPath
from linkcheck.transport.base import NodeTarget, parse_target
from linkcheck.yamlfile import line_of, parse_yaml_text, read_yaml_text

if TYPE_CHECKING:  # the facts model loads only for a `link:` section: `check` reads its config before connecting
    from linkcheck.facts.model import ExpectedLink

DEFAULT_PATH = Path("linkcheck.yaml")
CONFIG_VERSION = 1
TOP_KEYS = {"version", "nodes", "ssh", "link", "playbooks", "thresholds"}
NODE_KEYS = {"target", "identity_file"}
SSH_KEYS = {"known_hosts", "config", "connect_timeout_s", "command_timeout_s", "inspection_timeout_s",
            "accept_new_host_keys"}
MAX_TIMEOUT_S = 86400  # a day: a timeout longer than that is a typo, and inf or nan would never end a wait


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

    @property
    def expected_paths(self) -> tuple[tuple[str, str], ...]:
        return tuple((p.a, p.b) for p in self.expected_link.paths) if self.expected_link else ()


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, reason: str, node: Any = None, key: str | None = None) -> ConfigError:
        return ConfigError(self.path, reason, line=line_of(node, key))

    def mapping(self, data: Any, key: str, allowed: set[str]) -> dict[str, Any]:
        value = data.get(key, {})
        if not isinstance(value, dict):
            raise self.fail(f"'{key}' must be a mapping", data, key)
        unknown = sorted(set(value) - allowed) if allowed else []
        if unknown:
            raise self.fail(f"unknown key '{unknown[0]}' under '{key}' (expected: {', '.join(sorted(allowed))})",
                            value, unknown[0])
        return value

    def number(self, data: dict[str, Any], key: str, default: float) -> float:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TIMEOUT_S:
            raise self.fail(f"'{key}' must be a positive number of seconds, at most {MAX_TIMEOUT_S}, got "
                            f"{str(value)[:40]}", data, key)
        return float(value)


def _path(value: Any) -> Path | None:
    return Path(str(value)).expanduser() if value else None


def _nodes(r: _Reader, data: dict[str, Any]) -> dict[str, NodeTarget]:
    nodes = r.mapping(data, "nodes", {"a", "b"})
    out: dict[str, NodeTarget] = {}
    for name, raw in nodes.items():
        if isinstance(raw, str):
            raw = {"target": raw}
        if not isinstance(raw, dict) or not isinstance(raw.get("target"), str):
            raise r.fail(f"node '{name}' needs 'target: [user@]host[:port]'", nodes, name)
        unknown = sorted(set(raw) - NODE_KEYS)
        if unknown:
            raise r.fail(f"unknown key '{unknown[0]}' in node '{name}' (expected: target, identity_file)",
                         raw, unknown[0])
        identity = _path(raw.get("identity_file"))
        try:
            out[name] = _target(raw["target"], name, str(identity) if identity else None)
        except ConfigError as exc:
            raise r.fail(exc.reason, raw, "target") from None
    return out


def _ssh(r: _Reader, data: dict[str, Any]) -> SshOptions:
    ssh = r.mapping(data, "ssh", SSH_KEYS)
    accept = ssh.get("accept_new_host_keys", False)
    if not isinstance(accept, bool):
        raise r.fail("'accept_new_host_keys' must be true or false", ssh, "accept_new_host_keys")
    return SshOptions(
        known_hosts=_path(ssh.get("known_hosts")), config=_path(ssh.get("config")),
        connect_timeout_s=r.number(ssh, "connect_timeout_s", 10), command_timeout_s=int(r.number(
            ssh, "command_timeout_s", 20)), inspection_timeout_s=r.number(ssh, "inspection_timeout_s", 90),
        accept_new_host_keys=accept)


def _expected_link(r: _Reader, data: dict[str, Any]) -> ExpectedLink | None:
    """The `link:` section that `init` wrote: the cabled cage and the paths, compared with the live link."""
    if "link" not in data:
        return None
    link = r.mapping(data, "link", {"cage", "paths"})
    cage = link.get("cage")
    if cage is not None and not isinstance(cage, str):
        raise r.fail("'link.cage' must be a cage name such as p1", link, "cage")
    paths = link.get("paths", [])
    if not isinstance(paths, list):
        raise r.fail("'link.paths' must be a list of {a: netdev, b: netdev}", link, "paths")
    out = []
    for item in paths:
        if not isinstance(item, dict) or not isinstance(item.get("a"), str) or not isinstance(item.get("b"), str):
            raise r.fail("each path needs 'a: <netdev>' and 'b: <netdev>'", item if isinstance(item, dict) else link)
        unknown = sorted(set(item) - {"a", "b", "subnet"})
        if unknown:
            raise r.fail(f"unknown key '{unknown[0]}' in a path (expected: a, b, subnet)", item, unknown[0])
        subnet = item.get("subnet")
        if subnet is not None and not isinstance(subnet, str):
            raise r.fail("'subnet' must be a CIDR such as 192.168.100.0/24", item, "subnet")
        out.append(ExpectedPath(item["a"], item["b"], subnet))
    # The file name, not the path: the same config read from another folder gives the same findings.
    return ExpectedLink(cage=None if cage in (None, "none") else cage, paths=tuple(out), source=Path(r.path).name)


def _tuning(r: _Reader, data: dict[str, Any], base: Path) -> tuple[tuple[Path, ...], dict[str, dict[str, Any]]]:
    playbooks = data.get("playbooks", [])
    if not isinstance(playbooks, list) or not all(isinstance(p, str) for p in playbooks):
        raise r.fail("'playbooks' must be a list of file or folder paths", data, "playbooks")
    thresholds = r.mapping(data, "thresholds", set())
    for rule_id, values in thresholds.items():
        if not isinstance(rule_id, str):
            raise r.fail(f"thresholds: {rule_id!r} is not a rule id", thresholds)
        if not isinstance(values, dict):
            raise r.fail(f"thresholds for {rule_id} must be a mapping of name: value", thresholds, rule_id)
        if not all(isinstance(name, str) for name in values):
            raise r.fail(f"thresholds for {rule_id}: every name must be text", values)
    # The mapping and its values stay LineDicts, so an unknown rule or a bad override can still name its line.
    return tuple((base / Path(p).expanduser()) for p in playbooks), thresholds


def load_config(path: Path) -> Config:
    """Read and validate linkcheck.yaml."""
    data = parse_yaml_text(read_yaml_text(path, ConfigError), str(path), ConfigError)
    r = _Reader(str(path))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(str(path), "expected a mapping with 'nodes'", line=1)
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise r.fail(f"unknown key '{unknown[0]}' (expected: {', '.join(sorted(TOP_KEYS))})", data, unknown[0])
    version = data.get("version", CONFIG_VERSION)
    if isinstance(version, bool) or version != CONFIG_VERSION:
        raise r.fail(f"version {version!r} is not supported (this linkcheck reads version {CONFIG_VERSION})",
                     data, "version")
    playbooks, thresholds = _tuning(r, data, path.parent)
    return Config(nodes=_nodes(r, data), ssh=_ssh(r, data), expected_link=_expected_link(r, data),
                  playbooks=playbooks, thresholds=thresholds, source=str(path))


def _target(text: str, name: str, identity_file: str | None = None) -> NodeTarget:
    """parse_target, with an address written with colons required to be a real IPv6 address."""
    target = parse_target(text, name=name, identity_file=identity_file)
    if ":" in target.host:
        try:
            ipaddress.IPv6Address(target.host)
        except ValueError:
            raise ConfigError("--node", f"node {name}: {target.host!r} is not an IPv6 address (in {text!r})",
                              fix="use [user@]host[:port], IPv6 as [addr]:port") from None
    return target


def parse_node_options(options: list[str]) -> dict[str, NodeTarget]:
    """--node a=user@host --node b=user@host."""
    nodes: dict[str, NodeTarget] = {}
    for option in options:
        name, sep, target = option.partition("=")
        if not sep or name not in ("a", "b") or not target:
            raise ConfigError("--node", f"expected a=[user@]host[:port] or b=..., got {option!r}")
        nodes[name] = _target(target, name)
    return nodes


def find_config(config_path: Path | None) -> Config | None:
    """The config a command uses: the given file, else ./linkcheck.yaml when present, else none."""
    path = config_path or (DEFAULT_PATH if DEFAULT_PATH.is_file() else None)
    return load_config(path) if path else None


def resolve_config(config_path: Path | None, node_options: list[str]) -> Config:
    """The config file (if given or present) with --node options taking precedence."""
    config = find_config(config_path) or Config(nodes={})
    overrides = parse_node_options(node_options)
    for name, target in overrides.items():
        # --node changes where a node is; the key named for it in linkcheck.yaml still applies.
        old = config.nodes.get(name)
        if old is not None and target.identity_file is None and old.identity_file:
            overrides[name] = replace(target, identity_file=old.identity_file)
    nodes = {**config.nodes, **overrides}
    missing = [n for n in ("a", "b") if n not in nodes]
    if missing:
        raise ConfigError(config.source or "--node", f"node {missing[0]} is not configured",
                          fix="pass --node a=user@host --node b=user@host, or run `linkcheck init`")
    return Config(nodes=nodes, ssh=config.ssh, expected_link=config.expected_link, playbooks=config.playbooks,
                  thresholds=config.thresholds, source=config.source)
