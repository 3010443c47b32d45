"""`linkcheck verify`: an intact bundle passes; one changed byte, an added or a removed file is named, exit 2."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from linkcheck.bundle.digests import SUMS, files_digest, parse_sums, sums_text
from linkcheck.bundle.format import Bundle, load_bundle, write_bundle
from linkcheck.bundle.verify import FIXTURE_ONLY, verify_bundle
from linkcheck.model import Capture
from tests.conftest import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted(p.parent for p in (ROOT / "fixtures").glob("*/manifest.json"))


def run(*args: str) -> CliResult:
    """linkcheck in process: these tests judge what it says and exits with, not the process."""
    return run_cli(*args)


def _written(tmp_path: Path) -> Path:
    captures = [Capture("a", "hostname", "hostname", "node-a\n"), Capture("b", "hostname", "hostname", "node-b\n"),
                Capture("a", "ethtool", "ethtool x", "Speed: 200000Mb/s\n", stderr="warn\n", arg="enp1s0f1np1")]
    target = tmp_path / "bundle"
    write_bundle(Bundle(captures=captures, nodes={"a": {"hostname": "node-a"}}), target)
    return target


def test_fixtures_exist() -> None:
    assert len(FIXTURES) >= 20


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name)
def test_every_shipped_fixture_verifies(fixture: Path) -> None:
    result = verify_bundle(fixture)
    assert result.problems == ()
    assert result.files == len(json.loads((fixture / "manifest.json").read_text())["files"])


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name)
def test_changed_byte_added_and_removed_file_are_named(fixture: Path, tmp_path: Path) -> None:
    copy = tmp_path / fixture.name
    shutil.copytree(fixture, copy)
    listed = sorted(json.loads((copy / "manifest.json").read_text())["files"])
    # A file and a byte picked from the fixture's name, so each fixture tampers somewhere else.
    seed = int(hashlib.sha256(fixture.name.encode()).hexdigest(), 16)
    victim = listed[seed % len(listed)]
    data = bytearray((copy / victim).read_bytes() or b"\0")
    data[seed % len(data)] ^= 0x01
    (copy / victim).write_bytes(bytes(data))
    assert verify_bundle(copy).problems == (f"changed: {victim} (sha256 {hashlib.sha256(data).hexdigest()}, "
                                            f"manifest.json says {_listed_digest(copy, victim)})",)
    shutil.copy2(fixture / victim, copy / victim)
    assert verify_bundle(copy).ok

    (copy / "a" / "bench" / "planted.stdout").parent.mkdir(exist_ok=True)
    (copy / "a" / "bench" / "planted.stdout").write_text("190.00\n")
    assert verify_bundle(copy).problems == ("added: a/bench/planted.stdout (not in manifest.json)",)
    (copy / "a" / "bench" / "planted.stdout").unlink()

    removed = listed[(seed >> 8) % len(listed)]
    (copy / removed).unlink()
    assert verify_bundle(copy).problems == (f"removed: {removed} (listed in manifest.json, missing from the folder)",)


def _listed_digest(bundle: Path, rel: str) -> str:
    digest: str = json.loads((bundle / "manifest.json").read_text())["files"][rel]
    return digest


def test_fixture_only_names_are_ignored_only_at_the_top(tmp_path: Path) -> None:
    bundle = _written(tmp_path)
    for name in FIXTURE_ONLY:
        (bundle / name).write_text("x\n")
        (bundle / "a" / name).write_text("x\n")
    problems = verify_bundle(bundle).problems
    assert sorted(problems) == sorted(f"added: a/{name} (not in manifest.json)" for name in FIXTURE_ONLY)
    (bundle / "notes.txt").write_text("x\n")
    assert "added: notes.txt (not in manifest.json)" in verify_bundle(bundle).problems


def test_written_bundle_has_sha256sums_that_sha256sum_accepts(tmp_path: Path) -> None:
    bundle = _written(tmp_path)
    text = (bundle / SUMS).read_text()
    listed, problems = parse_sums(text)
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert problems == [] and set(listed) == {*manifest["files"], "manifest.json"}
    assert all("  " in line and not line.split("  ", 1)[1].startswith("/") for line in text.splitlines())
    # The documented bytes: SHA256SUMS without its manifest.json line.
    table = "".join(line + "\n" for line in text.splitlines() if not line.endswith("  manifest.json"))
    assert manifest["files_sha256"] == hashlib.sha256(table.encode()).hexdigest() == files_digest(manifest["files"])
    result = verify_bundle(bundle)
    assert result.ok and result.sums_checked and result.digest_checked
    if shutil.which("sha256sum") is None:
        pytest.skip("sha256sum (coreutils) is not installed")
    check = subprocess.run(["sha256sum", "-c", SUMS], cwd=bundle, capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    (bundle / "a" / "hostname.stdout").write_text("node-x\n")
    assert subprocess.run(["sha256sum", "-c", "--quiet", SUMS], cwd=bundle, capture_output=True,
                          check=False).returncode != 0


def test_manifest_edits_are_caught(tmp_path: Path) -> None:
    bundle = _written(tmp_path)
    manifest_path = bundle / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    # A changed capture and its files entry updated to match: the table's digest and SHA256SUMS disagree.
    (bundle / "a" / "hostname.stdout").write_text("node-x\n")
    manifest["files"]["a/hostname.stdout"] = hashlib.sha256(b"node-x\n").hexdigest()
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    problems = verify_bundle(bundle).problems
    assert any(p.startswith("changed: manifest.json (files_sha256") for p in problems), problems
    assert any(p.startswith("changed: SHA256SUMS (SHA256SUMS says") and "a/hostname.stdout" in p for p in problems)
    assert any(p.startswith("changed: manifest.json (SHA256SUMS says") for p in problems), problems


def test_missing_sha256sums_is_named_when_the_manifest_says_it_was_written(tmp_path: Path) -> None:
    bundle = _written(tmp_path)
    (bundle / SUMS).unlink()
    assert verify_bundle(bundle).problems == (
        "removed: SHA256SUMS (manifest.json records files_sha256, so SHA256SUMS was written beside it)",)


def test_bundle_without_sha256sums_still_loads_and_verifies(tmp_path: Path) -> None:
    bundle = _written(tmp_path)
    (bundle / SUMS).unlink()
    manifest = json.loads((bundle / "manifest.json").read_text())
    del manifest["files_sha256"]
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    loaded = load_bundle(bundle)
    assert loaded.problems == [] and loaded.capture("a", "hostname") is not None
    result = verify_bundle(bundle)
    assert result.ok and not result.sums_checked and not result.digest_checked


def test_unhashed_capture_and_symlink_are_named(tmp_path: Path) -> None:
    bundle = _written(tmp_path)
    manifest = json.loads((bundle / "manifest.json").read_text())
    del manifest["files"]["b/hostname.stdout"]
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    (bundle / "link").symlink_to("/etc")
    problems = verify_bundle(bundle).problems
    assert "added: b/hostname.stdout (not in manifest.json)" in problems
    assert "added: link (not in manifest.json)" in problems
    assert any(p.startswith("unhashed: b/hostname.stdout") for p in problems)


def test_sums_text_round_trips_odd_names() -> None:
    files = {"a/x.stdout": "0" * 64, "a/back\\slash": "1" * 64, "a/new\nline": "2" * 64}
    assert parse_sums(sums_text(files)) == (files, [])
    assert parse_sums("nonsense\n")[1] == ["SHA256SUMS:1: not a `sha256sum` line: 'nonsense'"]


def test_cli_verify_exit_codes(tmp_path: Path) -> None:
    ok = run("verify", str(ROOT / "fixtures" / "healthy"))
    assert ok.returncode == 0, ok.stderr
    assert "intact" in ok.stdout and "NOT" not in ok.stdout
    copy = tmp_path / "healthy"
    shutil.copytree(ROOT / "fixtures" / "healthy", copy)
    (copy / "a" / "uptime.stdout").unlink()
    (copy / "b" / "evil\x1b]0;x\x07.stdout").write_text("x")
    bad = run("verify", str(copy))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    lines = bad.stdout.splitlines()
    assert lines[0].startswith("removed: a/uptime.stdout") and lines[1].startswith("added: b/evil\\x1b]0;x\\x07")
    # The summary line wraps to the terminal (a long temporary path), its continuation indented.
    summary = " ".join(line.strip() for line in lines[2:])
    assert all(line.startswith(" ") for line in lines[3:]) and "NOT intact, 2 problem(s)" in summary
    not_bundle = run("verify", str(tmp_path / "nope"))
    assert not_bundle.returncode == 4 and len(not_bundle.stderr.strip().splitlines()) == 1


# --- trust: what `verify` rejects, `diagnose`, `report`, `anonymize` and `baseline save` never use silently ------


def _table_rehashed(tmp_path: Path, rel: str = "a/nccl_conf.stdout", content: bytes = b"NCCL_IB_GID_INDEX=7\n",
                    *, digest: bool = False) -> Path:
    """The healthy fixture with one capture changed and its manifest table updated to match (and files_sha256
    with `digest`): load_bundle alone finds nothing wrong; SHA256SUMS still names the change."""
    bundle = tmp_path / "tampered"
    shutil.copytree(ROOT / "fixtures" / "healthy", bundle)
    (bundle / rel).write_bytes(content)
    data = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    data["files"][rel] = hashlib.sha256(content).hexdigest()
    if digest:
        data["files_sha256"] = files_digest(data["files"])
    (bundle / "manifest.json").write_text(json.dumps(data), encoding="utf-8")
    return bundle


def _one_line(proc: CliResult, code: int, *needles: str) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert all(n in lines[0] for n in needles), lines[0]
    return lines[0]


@pytest.mark.parametrize("digest", [False, True])
def test_tampered_bundle_refused_by_every_reader(tmp_path: Path, digest: bool) -> None:
    bundle = _table_rehashed(tmp_path, digest=digest)
    assert load_bundle(bundle).problems == []  # the table alone vouches for the change
    assert run("verify", str(bundle)).returncode == 2
    _one_line(run("diagnose", str(bundle)), 4, str(bundle), "does not verify", "--allow-unverified")
    _one_line(run("diagnose", str(bundle), "-f", "json"), 4, "does not verify")
    out = tmp_path / "report.json"
    _one_line(run("report", str(bundle), "-o", str(out)), 4, "does not verify")
    assert not out.exists()
    _one_line(run("anonymize", str(bundle), str(tmp_path / "anon")), 4, "does not verify")
    assert not (tmp_path / "anon").exists()
    env_run = run_cli("baseline", "save", "b1", str(bundle), env={"XDG_DATA_HOME": str(tmp_path / "xdg")})
    _one_line(env_run, 4, "does not verify")
    assert not (tmp_path / "xdg" / "linkcheck" / "baselines").exists()


def test_allow_unverified_says_so_and_never_reads_the_doubted_file(tmp_path: Path) -> None:
    bundle = _table_rehashed(tmp_path, "a/hostname.stdout", b"forged-host\n")
    proc = run("diagnose", str(bundle), "--allow-unverified", "-f", "json")
    assert proc.returncode == 3, proc.stderr  # what it cannot read is inconclusive, never a pass
    assert "forged-host" not in proc.stdout
    warned = [ln for ln in proc.stderr.splitlines() if "UNVERIFIED" in ln]
    assert warned and any("a/hostname.stdout" in ln for ln in warned)
    report = run("report", str(bundle), "--allow-unverified", "-f", "markdown")
    assert report.returncode == 3 and "forged-host" not in report.stdout and "UNVERIFIED" in report.stderr


def test_manifest_in_doubt_reads_no_file(tmp_path: Path) -> None:
    """files_sha256 (or SHA256SUMS' digest of the manifest) disagrees: nothing the table vouches for is read."""
    bundle = _table_rehashed(tmp_path)
    loaded = verify_bundle(bundle)
    assert "manifest.json" in loaded.unverified and "b/hostname.stdout" in loaded.unverified
    proc = run("diagnose", str(bundle), "--allow-unverified", "-f", "json")
    assert proc.returncode == 3
    assert all(f["status"] in ("skip", "pass") for f in json.loads(proc.stdout)["findings"])
    assert not any(f["status"] == "pass" for f in json.loads(proc.stdout)["findings"]
                   if f["id"] in ("GID_INDEX_STALE", "LINK_DOWN"))


def test_symlinked_sums_and_manifest_refused(tmp_path: Path) -> None:
    bundle = tmp_path / "b"
    shutil.copytree(ROOT / "fixtures" / "healthy", bundle)
    (tmp_path / "SUMS.copy").write_bytes((bundle / SUMS).read_bytes())
    (bundle / SUMS).unlink()
    (bundle / SUMS).symlink_to(tmp_path / "SUMS.copy")
    proc = run("verify", str(bundle))
    assert proc.returncode == 2 and "symbolic link" in proc.stdout
    _one_line(run("diagnose", str(bundle)), 4, "does not verify")
    bundle2 = tmp_path / "b2"
    shutil.copytree(ROOT / "fixtures" / "healthy", bundle2)
    (tmp_path / "manifest.copy").write_bytes((bundle2 / "manifest.json").read_bytes())
    (bundle2 / "manifest.json").unlink()
    (bundle2 / "manifest.json").symlink_to(tmp_path / "manifest.copy")
    for command in ("verify", "diagnose", "report"):
        _one_line(run(command, str(bundle2)), 4, "manifest.json", "symbolic link")


@pytest.mark.parametrize("where", ["a", "a/bench", "extra"])
def test_symlink_anywhere_inside_a_bundle_is_suspicious(tmp_path: Path, where: str) -> None:
    bundle = tmp_path / "b"
    shutil.copytree(ROOT / "fixtures" / "healthy", bundle)
    target = bundle / where
    if target.exists():  # a folder replaced by a link to an identical copy: same bytes, still not trusted
        shutil.copytree(target, tmp_path / "elsewhere")
        shutil.rmtree(target)
        target.symlink_to(tmp_path / "elsewhere")
    else:
        target.symlink_to("/etc/hostname")
    proc = run("verify", str(bundle))
    assert proc.returncode == 2 and where in proc.stdout, proc.stdout
    _one_line(run("diagnose", str(bundle)), 4, "does not verify")


def _with_acceptance(tmp_path: Path) -> Path:
    from linkcheck.bundle.acceptance import write_acceptance

    bundle = tmp_path / "accepted"
    shutil.copytree(ROOT / "fixtures" / "healthy", bundle)
    doc = {"schema": "linkcheck-acceptance", "schema_version": 1, "verdict": "PASS", "exit_code": 0, "checks": [],
           "evidence": {"nodes": {"a": {"hostname": "dgx-spark-1", "ip": "192.168.100.10"},
                                  "b": {"hostname": "dgx-spark-2"}},
                        "runs": [{"command": "ib_write_bw -d rocep1s0f1 192.168.100.11 on dgx-spark-2"}]}}
    write_acceptance(bundle, doc, "profile: site-pair\nversion: 1\n")
    assert verify_bundle(bundle).ok
    return bundle


def test_anonymize_keeps_the_acceptance_record_anonymised(tmp_path: Path) -> None:
    bundle = _with_acceptance(tmp_path)
    out = tmp_path / "anon"
    proc = run("anonymize", str(bundle), str(out))
    assert proc.returncode == 0, proc.stderr
    assert (out / "acceptance.json").is_file() and (out / "acceptance-profile.yaml").is_file()
    text = (out / "acceptance.json").read_text(encoding="utf-8")
    assert "dgx-spark" not in text and "192.168.100." not in text and "node-a" in text
    assert json.loads(text)["schema"] == "linkcheck-acceptance"
    result = verify_bundle(out)
    assert result.ok, result.problems
    report = json.loads(run("report", str(out), "-f", "json").stdout)
    assert report["acceptance"]["verdict"] == "PASS"


def test_anonymize_refuses_a_changed_acceptance_record(tmp_path: Path) -> None:
    bundle = _with_acceptance(tmp_path)
    (bundle / "acceptance.json").write_text('{"schema": "linkcheck-acceptance", "checks": [], "verdict": "PASS"}')
    _one_line(run("anonymize", str(bundle), str(tmp_path / "anon")), 4, "acceptance.json")
    assert not (tmp_path / "anon").exists()


@pytest.mark.parametrize("raw", [
    '"exit_code": "0"', '"exit_code": ' + "9" * 5000, '"checks": [{"id": 1, "subject": "s", "status": "PASS"}]',
    '"checks": [{"id": "x", "subject": "s", "status": "PASS", "measured": {"min": 1e999, "max": 1, "median": 1}}]',
    '"checks": [{"id": "x", "subject": "s", "status": "PASS", "margin": "wide"}]',
    '"checks": [{"id": "x", "subject": "s", "status": "FAIL", "thresholds": [{"operator": ">=", "value": {}, '
    '"unit": "Gb/s", "on_miss": "FAIL", "source": "s"}]}]',
    '"checks": ["x"]', '"evidence": {"nodes": {"a": "spark"}}', '"evidence": {"cable": "x"}',
    '"diagnosis": {"findings": 3}', '"profile": []', '"checks": [{"id": "x", "subject": "s", "status": "PASS", '
    '"measured": {"min": ' + "1" * 400 + '}}]',
])
def test_forged_acceptance_record_is_named_not_shown(tmp_path: Path, raw: str) -> None:
    """A bundle whose acceptance.json was forged and every digest written again verifies; its record is still
    read through a typed schema: named, not shown, and the report keeps its exit code (never 70)."""
    from linkcheck.bundle.acceptance import add_files

    bundle = tmp_path / "b"
    shutil.copytree(ROOT / "fixtures" / "healthy", bundle)
    text = '{"schema": "linkcheck-acceptance", "schema_version": 1, "verdict": "PASS", "exit_code": 0, ' \
           '"checks": [], ' + raw + "}"
    add_files(bundle, {"acceptance.json": text})
    assert verify_bundle(bundle).ok
    shown = {fmt: run("report", str(bundle), "-f", fmt) for fmt in ("json", "markdown", "html")}
    for proc in shown.values():
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(shown["json"].stdout)
    assert set(report["acceptance"]) == {"problem"}, report["acceptance"]
