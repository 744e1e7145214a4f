"""The image, built for real from the Dockerfile and run: podman and buildah from Debian,
on a base rebuilt from Debian's archive (scripts/image.sh), from a clean `git archive` of
HEAD (a work tree's stray builds would hide a failing one).

Every container runs without a network but the demo's, which shares the host's (its port
on the loopback addresses only). See docs/deploy.md#the-image.
"""

from __future__ import annotations

import json
import os
import re
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ragstream.config import HttpSettings
from tests.support.fetch import SCRIPTS, run_fetch
from tests.support.kafka_files import free_port
from tests.support.podman import Podman, PodmanError, cache_dir

ROOT = Path(__file__).parents[2]
IMAGE = "localhost/ragstream:suite"
DOCKERFILE = (ROOT / "Dockerfile").read_text()
EXTENSIONS = re.findall(r'Extension\(\s*"([\w.]+)"', (ROOT / "setup.py").read_text())
SITE = "/opt/ragstream/lib/python3.11/site-packages"


def _base() -> str:
    """The one base image every stage of the Dockerfile starts from."""
    bases: set[str] = set(re.findall(r"^FROM (\S+)", DOCKERFILE, re.MULTILINE))
    (base,) = bases
    return base


@pytest.fixture(scope="module")
def podman(tmp_path_factory: pytest.TempPathFactory) -> Podman:
    """podman with the base imported; skipped only where containers cannot run at all."""
    if os.geteuid() != 0 and not os.environ.get("CI"):
        pytest.skip(
            "the image is built with podman as root (rootless podman needs subordinate ids)"
        )
    tarball = run_fetch(SCRIPTS / "image.sh", PodmanError, timeout=1800.0)
    runner = Podman(tmp_path_factory.mktemp("podman"), cache_dir() / "storage")
    runner.import_base(_base(), tarball)
    return runner


def _ca_bundle() -> Path:
    """The machine's certificate bundle, which pip in the build trusts."""
    for name in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        value = os.environ.get(name)
        if value and Path(value).is_file():
            return Path(value)
    default = ssl.get_default_verify_paths().cafile
    assert default, "no certificate bundle on this machine"
    return Path(default)


@pytest.fixture(scope="module")
def image(podman: Podman, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The Dockerfile built from `git archive HEAD`; the certificate bundle is mounted on
    /mnt (a folder the base has, so no mount point is left in a layer)."""
    context = tmp_path_factory.mktemp("context")
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", "HEAD"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(context)], input=archive, check=True)
    bundle = _ca_bundle()
    volumes = [f"{bundle.parent}:/mnt:ro"]
    build_args = {"PIP_CERT": f"/mnt/{bundle.name}"}
    # The build stage tagged too, so that pruning keeps its layers for the next run; the
    # layers of earlier commits' images are pruned.
    for tag, target in ((f"{IMAGE}-build", "build"), (IMAGE, None)):
        podman.build(context, tag, target=target, volumes=volumes, build_args=build_args)
    podman("image", "prune", "--force", timeout=600.0)
    return IMAGE


def test_the_image_is_built_on_the_debian_release_it_names_with_debians_python(
    podman: Podman, image: str
) -> None:
    version = re.fullmatch(r"docker\.io/library/debian:([\d.]+)-slim", _base())
    assert version
    code, out = podman.run(
        image,
        "-c",
        "cat /etc/debian_version; dpkg-query -W -f '${Version}\\n' python3.11; "
        "readlink -f /opt/ragstream/bin/python; ls -A /mnt; command -v gcc || echo no-gcc",
        options=["--entrypoint", "sh"],
    )
    assert code == 0, out
    release, python_package, python, *rest = out.splitlines()
    assert release == version.group(1)
    assert python_package.startswith("3.11.")  # Debian's package, not a build of its own
    assert python == "/usr/bin/python3.11"
    # the build's certificate mount left nothing behind, and the image has no compiler
    assert rest == ["no-gcc"]


def test_help_and_the_numeric_user(podman: Podman, image: str) -> None:
    code, out = podman.run(image, "--help")
    assert code == 0, out
    for command in ("run", "demo", "eval", "check-config"):
        assert re.search(rf"^\s+{command}\s", out, re.MULTILINE), out
    config = json.loads(podman("image", "inspect", "--format", "{{json .Config}}", image).stdout)
    assert config["User"] == "10001:10001"  # numeric: Kubernetes' runAsNonRoot can verify it
    assert set(config["ExposedPorts"]) == {f"{HttpSettings().port}/tcp"}
    assert "PYTHONDONTWRITEBYTECODE=1" in config["Env"]  # a read-only root filesystem works


def test_the_compiled_extensions_and_every_kafka_codec_load_from_the_installed_package(
    podman: Podman, image: str
) -> None:
    assert EXTENSIONS
    assert len(EXTENSIONS) == (ROOT / "setup.py").read_text().count("Extension(")
    script = (
        "import importlib; from aiokafka import codec\n"
        f"for name in {EXTENSIONS!r}: print(importlib.import_module(name).__file__)\n"
        "print(codec.has_gzip(), codec.has_snappy(), codec.has_lz4(), codec.has_zstd())\n"
    )
    code, out = podman.run(image, "-c", script, options=["--entrypoint", "python"])
    assert code == 0, out
    *files, codecs = out.splitlines()
    for name, file in zip(EXTENSIONS, files, strict=True):
        assert file.startswith(f"{SITE}/{name.replace('.', '/')}.cpython-311-"), file
        assert file.endswith(".so"), file
    assert codecs == "True True True True"


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, ""


@pytest.fixture
def demo(podman: Podman, image: str) -> Iterator[tuple[str, int]]:
    """A 20 s demo on a free port of the host's network, read-only root, no capabilities."""
    port = free_port()
    container = podman.start(
        image,
        "demo",
        "--duration",
        "20",
        "--refresh",
        "5",
        options=[
            "--network",
            "host",
            "--read-only",
            "--read-only-tmpfs=false",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            "--env",
            f"RAGSTREAM_HTTP__PORT={port}",
        ],
    )
    try:
        yield container, port
    finally:
        podman.remove(container)


def test_the_demo_serves_healthz_and_metrics_on_every_address_and_passes_its_healthcheck(
    podman: Podman, demo: tuple[str, int]
) -> None:
    container, port = demo
    started = time.monotonic()
    # 127.0.0.2 is loopback but not 127.0.0.1: it answers only when the demo binds every
    # address, as a published port needs.
    deadline = started + 15
    while _get_or_none(f"http://127.0.0.2:{port}/healthz") != 200:
        assert time.monotonic() < deadline, podman.logs(container)
        time.sleep(0.2)
    time.sleep(5)  # a few seconds of traffic
    status, body = _get(f"http://127.0.0.2:{port}/metrics")
    assert status == 200
    events = [
        sample.value
        for family in text_string_to_metric_families(body)
        for sample in family.samples
        if sample.name == "ragstream_events_total"
    ]
    assert sum(events) > 0, body
    health = podman("healthcheck", "run", container, check=False)
    assert health.returncode == 0, health.stdout + health.stderr
    code = podman.wait_exited(container, timeout=40)
    out = podman.logs(container)
    assert code == 0, out
    assert time.monotonic() - started < 40


def _get_or_none(url: str) -> int | None:
    try:
        return _get(url)[0]
    except OSError:
        return None


def test_the_healthcheck_fails_when_nothing_serves_its_port(podman: Podman, image: str) -> None:
    container = podman.start(
        image,
        "-c",
        "import time; time.sleep(60)",
        options=[
            "--network",
            "none",
            "--entrypoint",
            "python",
            "--env",
            f"RAGSTREAM_HTTP__PORT={free_port()}",
        ],
    )
    try:
        health = podman("healthcheck", "run", container, check=False)
        assert health.returncode == 1, health.stdout + health.stderr
        assert "unhealthy" in health.stdout + health.stderr
    finally:
        podman.remove(container)


def test_a_work_trees_build_context_holds_only_the_sources_the_dockerfile_copies(
    podman: Podman, tmp_path: Path
) -> None:
    """The work tree itself (virtual environment, caches, extensions built in place) as
    context, through .dockerignore: only files git tracks under the copied paths."""
    containerfile = tmp_path / "Containerfile"
    containerfile.write_text(
        f'FROM {_base()}\nCOPY . /context\nCMD ["find", "/context", "-type", "f"]\n'
    )
    podman.build(ROOT, "localhost/ragstream-context:suite", containerfile=containerfile)
    try:
        code, out = podman.run("localhost/ragstream-context:suite")
    finally:
        podman("rmi", "localhost/ragstream-context:suite", check=False)
    assert code == 0, out
    sent = {line.removeprefix("/context/") for line in out.splitlines()}
    copied = ("pyproject.toml", "setup.py", "README.md", "ragstream/")
    tracked = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", *copied], capture_output=True, text=True, check=True
    ).stdout.split()
    assert set(tracked) <= sent
    # new sources not yet committed may be sent too; nothing built or cached is
    built = [
        path
        for path in sent
        if path.endswith((".so", ".pyc")) or "__pycache__/" in path or ".egg-info/" in path
    ]
    assert built == []
    assert all(path.startswith(copied) for path in sent), sorted(sent)
