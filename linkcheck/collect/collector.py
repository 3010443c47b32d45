"""Inspect both nodes at once: one script, one round trip per node, answers split into captures.

A node that cannot be reached, times out or answers only in part gives an error entry and whatever
captures it did return; `collect` itself never raises, so the other node is still diagnosed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

import msgspec
from msgspec.structs import replace

from linkcheck.bundle.format import MAX_CAPTURE_BYTES
from linkcheck.collect.script import build_inspection_script, new_token, split_script_output
from linkcheck.collect.specs import SPECS, Spec
from linkcheck.errors import LinkcheckError, NodeError
from linkcheck.model import Capture
from linkcheck.transport.base import (
    CommandTimeoutError,
    ConnectionDroppedError,
    NodeTarget,
    RemoteResult,
    Transport,
)
from linkcheck.transport.local import LocalTransport

log = logging.getLogger(__name__)

DEFAULT_PER_COMMAND_TIMEOUT_S = 20
# After Ctrl-C, how long the closed connections may take to hand back what the nodes sent.
INTERRUPT_GRACE_S = 10


class CollectResult(msgspec.Struct, frozen=True):
    """Every capture from every node, and per node the error that kept it from being complete."""

    captures: list[Capture] = msgspec.field(default_factory=list)
    errors: dict[str, LinkcheckError] = msgspec.field(default_factory=dict)
    interrupted: bool = False


def open_transports(
    targets: Sequence[NodeTarget],
    *,
    known_hosts: Path | None = None,
    accept_new_host_keys: bool = False,
    ssh_config: Path | None = None,
    connect_timeout_s: float = 10,
) -> dict[str, Transport]:
    """A transport per node: this machine for a bare `localhost`, SSH otherwise (connected on first use)."""
    # Late: it loads paramiko, which a run of local nodes (or no nodes) never needs.
    from linkcheck.transport.ssh import SshTransport

    transports: dict[str, Transport] = {}
    for target in targets:
        if target.is_local:
            transports[target.name] = LocalTransport(target.name)
        else:
            transports[target.name] = SshTransport(
                target,
                known_hosts=known_hosts,
                accept_new_host_keys=accept_new_host_keys,
                ssh_config=ssh_config,
                connect_timeout_s=connect_timeout_s,
                banner_timeout_s=connect_timeout_s,
                auth_timeout_s=connect_timeout_s,
            )
    return transports


def close_transports(transports: Mapping[str, Transport]) -> None:
    for transport in transports.values():
        transport.close()


def collect(
    transports: Mapping[str, Transport],
    specs: Sequence[Spec] = SPECS,
    *,
    timeout_s: float,
    per_command_timeout_s: int = DEFAULT_PER_COMMAND_TIMEOUT_S,
    containers: Mapping[str, Sequence[str]] | None = None,
) -> CollectResult:
    """Run the inspection on every node in parallel (one thread, one round trip each); `containers` names, per node,
    the containers whose NCCL the same round trip reads (through the node's docker or podman).

    Ctrl-C closes the connections, which ends the remote scripts; what each node sent until then is kept and
    the result says it was interrupted."""
    per_command = max(1, min(per_command_timeout_s, int(timeout_s)))
    result = CollectResult()
    pool = ThreadPoolExecutor(max_workers=max(1, len(transports)), thread_name_prefix="collect")
    futures = {
        name: pool.submit(_collect_node_safely, name, transport, specs, timeout_s, per_command,
                          tuple((containers or {}).get(name, ())))
        for name, transport in transports.items()
    }
    try:
        wait(futures.values())
    except KeyboardInterrupt:
        result = CollectResult(interrupted=True)
        close_transports(transports)
        wait(futures.values(), timeout=INTERRUPT_GRACE_S)
    finally:
        pool.shutdown(wait=False)
    for name, future in futures.items():
        captures, error = future.result() if future.done() else ([], NodeError(name, "interrupted (Ctrl-C)"))
        result.captures.extend(captures)
        if error is not None:
            result.errors[name] = error
    return result


def _collect_node_safely(
    name: str, transport: Transport, specs: Sequence[Spec], timeout_s: float, per_command_s: int,
    containers: Sequence[str] = (),
) -> tuple[list[Capture], LinkcheckError | None]:
    try:
        return _collect_node(name, transport, specs, timeout_s, per_command_s, containers)
    except LinkcheckError as exc:
        return [], exc
    except Exception as exc:  # a bug must not cost the other node its diagnosis; --debug logs the trace
        log.debug("collection on node %s failed", name, exc_info=True)
        return [], NodeError(name, f"inspection failed unexpectedly: {type(exc).__name__}: {exc}")


def _collect_node(
    name: str, transport: Transport, specs: Sequence[Spec], timeout_s: float, per_command_s: int,
    containers: Sequence[str] = (),
) -> tuple[list[Capture], LinkcheckError | None]:
    native = _native_captures(name, specs) if isinstance(transport, LocalTransport) else []
    native_ids = {c.spec for c in native}
    remote_specs = [s for s in specs if s.id not in native_ids]
    token = new_token()
    script = build_inspection_script(remote_specs, token=token, per_command_timeout_s=per_command_s,
                                     containers=containers)
    answer, error = _run_script(transport, script, timeout_s)
    captures, complete = split_script_output(
        name, answer.stdout if answer else "", remote_specs, token, per_command_timeout_s=per_command_s
    )
    if not complete:
        if error is None:
            error = _truncated_error(name, answer, len(captures))
        captures += _not_reached(name, remote_specs, captures, error)
    order = {spec.id: i for i, spec in enumerate(specs)}
    return sorted(bounded(native + captures), key=lambda c: order.get(c.spec, len(order))), error


def bounded(captures: list[Capture]) -> list[Capture]:
    """Captures whose output is over MAX_CAPTURE_BYTES are kept as skipped ones, with the reason, not the text:
    a node's answer cannot make the bundle (or the parsers after it) hold gigabytes."""
    out = []
    for cap in captures:
        size = max(len(cap.stdout), len(cap.stderr))
        if size > MAX_CAPTURE_BYTES:
            cap = replace(cap, stdout="", stderr="", skipped=f"the node's answer was {size} characters, over the "
                          f"{MAX_CAPTURE_BYTES >> 20} MiB a capture may hold (not kept)")
        out.append(cap)
    return out


def _run_script(transport: Transport, script: str, timeout_s: float) -> tuple[RemoteResult | None, NodeError | None]:
    """The script's answer; on a timeout or a dropped link, the part that arrived and the error."""
    try:
        return transport.run("sh -s", timeout_s=timeout_s, stdin=script), None
    except CommandTimeoutError as exc:
        return exc.partial, CommandTimeoutError(exc.node, "the inspection script", exc.timeout_s, exc.partial)
    except ConnectionDroppedError as exc:
        return exc.partial, exc


def _truncated_error(name: str, answer: RemoteResult | None, sections: int) -> NodeError:
    status = answer.exit_status if answer is not None else None
    first = next((ln.strip() for ln in (answer.stderr if answer else "").splitlines() if ln.strip()), "")
    detail = f"; the script exited with status {status}" + (f": {first[:160]}" if first else "")
    return NodeError(
        name,
        f"answer truncated after {sections} sections (no completion sentinel){detail}",
        fix="re-run; if it repeats, check the node's /dev/shm and /tmp (mktemp) and its sh",
    )


def _not_reached(name: str, specs: Sequence[Spec], got: list[Capture], error: LinkcheckError) -> list[Capture]:
    """Mark the node-wide specs the answer never reached, so the bundle says why they are empty."""
    seen = {c.spec for c in got}
    reason = f"not collected: {getattr(error, 'reason', str(error))}"
    return [
        Capture(node=name, spec=s.id, command=s.command, stdout="", exit_status=None, skipped=reason)
        for s in specs
        if not s.per_netdev and not s.per_container and s.id not in seen
    ]


def _native_captures(name: str, specs: Sequence[Spec]) -> list[Capture]:
    """The local node's ip_* captures from netlink via pyroute2; empty (so `ip` runs) if that fails."""
    from linkcheck.transport.pyroute_facts import PYROUTE_SPECS, render_ip_json

    wanted = [s.id for s in specs if s.id in PYROUTE_SPECS]
    if not wanted:
        return []
    start = time.monotonic()
    try:
        rendered = render_ip_json()
    except Exception as exc:  # pyroute2 absent or netlink refused: the script's `ip -j` does the job
        log.warning("node %s: pyroute2 unavailable (%s); using ip -j instead", name, exc)
        return []
    duration = time.monotonic() - start
    return [
        Capture(
            node=name,
            spec=spec,
            command=f"pyroute2: {PYROUTE_SPECS[spec]}",
            stdout=rendered[spec],
            duration_s=duration,
        )
        for spec in wanted
    ]
