"""scripts/grafana_dashboard.py, the dashboard's generator, loaded as a module (a script
is not in a package)."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).parents[2] / "scripts" / "grafana_dashboard.py"


@functools.cache
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("grafana_dashboard", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module
