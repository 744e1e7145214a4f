"""scripts/bootstrap.sh, the install step of the demo and the tests: what a new user sees.

It runs the real script with the real pip of this environment on a small project whose
build backend speaks as setuptools does on an editable install (the same multi-line
"Editable installation" warning), or fails; nothing is fetched from an index.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pip
import pytest

ROOT = Path(__file__).resolve().parents[1]

# setuptools' text, as `InformationOnly.emit("Editable installation.", ...)` formats it
_NOTICE = (
    "Editable installation.\n!!\n\n        " + "*" * 80 + "\n        Please be careful with "
    "folders in your working directory with the same\n        name as your package as they "
    "may take precedence during imports.\n        " + "*" * 80 + "\n\n!!"
)

_BACKEND = textwrap.dedent(
    '''
    """A PEP 660 backend that warns as setuptools does, or fails when asked to."""
    import base64, hashlib, os, warnings, zipfile

    NOTICE = {notice!r}
    NAME = "probe-0.1.dist-info"


    def get_requires_for_build_editable(config_settings=None):
        if os.environ.get("PROBE_FAIL"):
            raise RuntimeError("probe: the build failed on purpose")
        return []


    def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
        warnings.warn(NOTICE, UserWarning, stacklevel=1)
        if os.environ.get("PROBE_WARN"):
            warnings.warn("probe: a warning of its own", UserWarning, stacklevel=1)
        files = {{
            NAME + "/METADATA": b"Metadata-Version: 2.1\\nName: probe\\nVersion: 0.1\\n",
            NAME + "/WHEEL": b"Wheel-Version: 1.0\\nGenerator: probe\\nRoot-Is-Purelib: true\\n"
            b"Tag: py3-none-any\\n",
        }}
        record = []
        for path, data in files.items():
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{{path}},sha256={{digest.decode()}},{{len(data)}}")
        record.append(NAME + "/RECORD,,")
        files[NAME + "/RECORD"] = ("\\n".join(record) + "\\n").encode()
        wheel = "probe-0.1-py3-none-any.whl"
        with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as archive:
            for path, data in files.items():
                archive.writestr(path, data)
        return wheel
    '''
).format(notice=_NOTICE)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with the real scripts/bootstrap.sh and a .venv that has this pip."""
    root = tmp_path_factory.mktemp("bootstrap")
    (root / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "bootstrap.sh", root / "scripts" / "bootstrap.sh")
    (root / "probe_backend.py").write_text(_BACKEND)
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "probe_backend"\nbackend-path = ["."]\n'
        '\n[project]\nname = "probe"\nversion = "0.1"\n'
    )
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", root / ".venv"], check=True)
    scheme = {"base": str(root / ".venv"), "platbase": str(root / ".venv")}
    site = Path(sysconfig.get_paths(vars=scheme)["purelib"])
    shutil.copytree(Path(pip.__file__).parent, site / "pip")  # the pip that runs the tests
    return root


def _bootstrap(project: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PIP_NO_INDEX": "1", "PIP_NO_CACHE_DIR": "1", **env}
    environ.pop("PYTHONWARNINGS", None)
    return subprocess.run(
        ["bash", str(project / "scripts" / "bootstrap.sh")],
        capture_output=True,
        text=True,
        env=environ,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_the_install_says_what_it_does_without_the_editable_notice(project: Path) -> None:
    result = _bootstrap(project)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert result.stdout.startswith("== installing ragstream into .venv"), output
    assert "Editable installation" not in output
    assert "be careful with folders" not in output
    assert result.stderr == ""  # one line of progress, and nothing else
    assert len(result.stdout.splitlines()) == 1, output


@pytest.mark.slow
def test_a_failed_install_shows_its_error(project: Path) -> None:
    result = _bootstrap(project, PROBE_FAIL="1")
    assert result.returncode != 0
    assert "probe: the build failed on purpose" in result.stdout + result.stderr


@pytest.mark.slow
def test_other_warnings_of_the_build_are_still_shown(project: Path) -> None:
    result = _bootstrap(project, PROBE_WARN="1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "probe: a warning of its own" in result.stderr
    assert "Editable installation" not in result.stderr
