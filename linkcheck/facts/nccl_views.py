"""The NCCL a job would load on a node and inside each container asked for (`--container`): which libnccl file,
with which settings and net plugin, from the probe's captures (linkcheck/collect/nccl_probe.sh).

Which file a job loads follows the dynamic loader (ld.so(8)): LD_PRELOAD first, then the LD_LIBRARY_PATH folders,
then the library's RUNPATH, then the cache `ldconfig -p` shows. A Python job (vLLM, SGLang, PyTorch) reaches NCCL
through torch's libtorch_cuda.so, whose RUNPATH leads to the pip wheel's site-packages/nvidia/nccl/lib: a wheel present
is what it loads unless LD_PRELOAD or LD_LIBRARY_PATH says otherwise (vllm-project/vllm#41725: the wheel, not DGX OS's
libnccl2, was loaded until its file was replaced). A process that has NCCL mapped now (/proc/PID/maps) settles it.
"""

from __future__ import annotations

from linkcheck.facts.model import NcclView
from linkcheck.facts.sources import NodeSources
from linkcheck.parsers.nccl_conf import parse_nccl_conf
from linkcheck.parsers.nccl_probe import NcclLibFile, NcclProbe

NOTES = {"not running": "the container is not running", "not found": "no such container",
         "no engine": "no container engine (docker, podman) on the node"}


def nccl_views(src: NodeSources) -> tuple[NcclView, ...]:
    """The host's view (when nccl_libs was collected), then one per container the inspection looked into."""
    views = []
    host = src.nccl_probe("nccl_libs")
    if host is not None:
        views.append(view_of(host, None))
    for name in src.args("container_nccl"):
        probe = src.nccl_probe("container_nccl", name)
        if probe is None:
            views.append(NcclView(container=name, state="unreadable", note=src.reason("container_nccl", name)))
        elif probe.state != "running":
            state = probe.state or "unreadable"
            note = NOTES.get(state, "the engine's answer could not be read")
            views.append(NcclView(container=name, engine=probe.engine, state=state,
                                  note=f"{note}: {probe.why}" if probe.why else note))
        else:
            views.append(view_of(probe, name))
    return tuple(views)


def view_of(probe: NcclProbe, container: str | None) -> NcclView:
    env = dict(probe.env)
    if probe.pid1_env is not None:  # the workload's own environment decides where it differs
        env.update(dict(probe.pid1_env))
    env_label = "environment (PID 1)" if probe.pid1_env is not None else "environment"
    settings: dict[str, str] = {}
    sources: dict[str, str] = {}
    # NCCL sets a file's variable only if it is not set yet (setenv(name, value, 0) in ncclOsSetEnv): the environment
    # wins, then NCCL_CONF_FILE or ~/.nccl.conf, then /etc/nccl.conf (src/misc/param.cc, initEnvFunc).
    for key, value in env.items():
        if key.startswith("NCCL_"):
            settings[key], sources[key] = value, env_label
    for conf in probe.conf_files:
        for key, value in parse_nccl_conf("\n".join(conf.lines)).values:
            if key not in settings:
                settings[key], sources[key] = value, conf.path
    library, why = loaded_library(probe, env)
    return NcclView(
        container=container, engine=probe.engine, library=library, chosen_by=why, libraries=probe.libraries,
        ldconfig=tuple(f"{e.name} => {e.path}" for e in probe.ldconfig),
        ld_library_path=env.get("LD_LIBRARY_PATH"), settings=settings, setting_sources=sources,
        conf_files=tuple(c.path for c in probe.conf_files), net_plugin=net_plugin(probe, settings),
        mapped=probe.mapped)


def _nccl(lib: NcclLibFile) -> bool:
    return not lib.plugin and lib.path.rsplit("/", 1)[-1].startswith("libnccl.so")


def _at(libs: list[NcclLibFile], path: str) -> NcclLibFile | None:
    return next((lib for lib in libs if path in (lib.path, lib.real_path)), None)


def loaded_library(probe: NcclProbe, env: dict[str, str]) -> tuple[NcclLibFile | None, str | None]:
    """The libnccl a job here loads, and why that one (the loader's order; see the module's docstring)."""
    libs = [lib for lib in probe.libraries if _nccl(lib)]
    for path in probe.mapped:
        if "/libnccl.so" in path and not path.endswith(" (deleted)"):
            return _at(libs, path) or NcclLibFile(path=path, real_path=path), "mapped by a running process"
    for path in env.get("LD_PRELOAD", "").replace(":", " ").split():
        if "/libnccl.so" in path and (found := _at(libs, path)) is not None:
            return found, "LD_PRELOAD"
    for folder in (d.rstrip("/") for d in env.get("LD_LIBRARY_PATH", "").split(":") if d):
        found = next((lib for lib in libs if lib.path.rsplit("/", 1)[0] == folder
                      and lib.path.endswith("/libnccl.so.2")), None)
        if found is not None:
            return found, f"LD_LIBRARY_PATH ({folder})"
    wheel = next((lib for lib in libs if lib.origin == "pip wheel" and lib.path.endswith("/libnccl.so.2")), None)
    if wheel is not None:
        return wheel, "the pip wheel (torch's RUNPATH reaches it before the loader's cache)"
    for entry in probe.ldconfig:
        if entry.name == "libnccl.so.2" and (found := _at(libs, entry.path)) is not None:
            return found, "the loader's cache (ldconfig -p)"
    first = next((lib for lib in libs if lib.path.endswith(".so.2")), libs[0] if libs else None)
    return first, "the only libnccl found" if first is not None and len(libs) == 1 else (
        "found, not in the loader's cache" if first is not None else None)


def net_plugin(probe: NcclProbe, settings: dict[str, str]) -> str:
    """The net plugin NCCL would load: NCCL_NET_PLUGIN's `none` loads none; a name N loads N itself or
    libnccl-net-N.so; unset, libnccl-net.so (src/plugin/net.cc, src/plugin/plugin_open.cc). A file found here is
    named; otherwise NCCL falls back to its internal IB and socket transports."""
    plugins = [lib for lib in probe.libraries if lib.plugin]
    wanted = settings.get("NCCL_NET_PLUGIN")
    if wanted is not None and wanted.strip().lower() == "none":
        return "none (NCCL_NET_PLUGIN=none: internal IB and socket only)"
    given = [w.strip() for w in (wanted or "").split(",") if w.strip()]
    names = [n for w in given for n in (w, f"libnccl-net-{w}.so")] or ["libnccl-net.so"]
    for name in names:
        found = next((p for p in plugins if p.path.rsplit("/", 1)[-1] == name.rsplit("/", 1)[-1]), None)
        if found is not None:
            return found.path
    return f"{', '.join(names)} not found: internal IB and socket"
