"""The Dockerfile, read (no image can be built here): every C extension built and checked,
a numeric non-root user, nothing that needs a writable root filesystem."""

from __future__ import annotations

import re
from pathlib import Path

from ragstream.config import HttpSettings

ROOT = Path(__file__).parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def _stages() -> list[list[str]]:
    """The instructions of each stage, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE)
    stages: list[list[str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("FROM "):
            stages.append([])
        stages[-1].append(line)
    return stages


def test_the_build_fails_unless_every_c_extension_compiled() -> None:
    extensions = set(re.findall(r'Extension\(\s*"([\w.]+)"', (ROOT / "setup.py").read_text()))
    assert extensions == {
        "ragstream.trec._scan",
        "ragstream.events._scan",
        "ragstream.drift._kernels",
        "ragstream.metrics._ragged",
    }
    build = " ".join(_stages()[0])
    (check,) = re.findall(r'python -c "import ([\w., ]+)"', build)
    assert {name.strip() for name in check.split(",")} == extensions


def test_both_stages_use_one_python_and_the_install_path_matches_it() -> None:
    images = [stage[0].split()[1] for stage in _stages()]
    assert len(images) == 2
    assert images[0] == images[1]
    (version,) = re.findall(r"python:(\d+\.\d+)-slim", images[0])
    assert f"/install/lib/python{version}/site-packages" in DOCKERFILE


def test_the_image_runs_as_a_numeric_non_root_user_and_writes_no_bytecode() -> None:
    final = _stages()[-1]
    users = [line.split()[1] for line in final if line.startswith("USER ")]
    assert len(users) == 1
    uid, gid = users[0].split(":")
    assert int(uid) > 0
    assert int(gid) > 0  # numeric: Kubernetes' runAsNonRoot can verify it
    assert f"--uid {uid} --gid {gid}" in " ".join(final)
    assert "PYTHONDONTWRITEBYTECODE=1" in " ".join(final)


def test_the_image_exposes_the_agents_port_and_runs_the_agent() -> None:
    final = _stages()[-1]
    assert f"EXPOSE {HttpSettings().port}" in final
    assert 'ENTRYPOINT ["ragstream"]' in final
    assert 'CMD ["run"]' in final


def test_every_copied_source_exists_and_the_context_leaves_out_local_builds() -> None:
    copies = [line.split()[1:-1] for line in _stages()[0] if line.startswith("COPY ")]
    sources = [source for sources in copies for source in sources]
    assert sources
    for source in sources:
        assert (ROOT / source).exists(), source
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".venv/", "*.so", ".git/"} <= set(ignored)  # the image compiles its own


def test_the_build_fails_unless_aiokafka_reads_every_kafka_codec() -> None:
    """A topic may be compressed with any codec; the image must read them all."""
    build = " ".join(_stages()[0])
    (check,) = re.findall(r'python -c "from aiokafka import codec; assert ([^"]+)"', build)
    assert set(re.findall(r"codec\.has_(\w+)\(\)", check)) == {"gzip", "snappy", "lz4", "zstd"}
    assert "aiokafka[lz4,snappy,zstd]" in (ROOT / "pyproject.toml").read_text()
