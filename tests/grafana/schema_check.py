"""Checks a Grafana dashboard against Grafana's own dashboard schema, offline.

Grafana defines its dashboard and panel models as CUE kinds and generates TypeScript types
from them; the npm package `@grafana/schema` ships those types (the classic dashboard JSON
model, `Dashboard`, and every core panel plugin's `Options` and `FieldConfig`). This module
writes the dashboard as TypeScript object literals checked with `satisfies` against those
types and runs the TypeScript compiler, so every key, type and enum value of the JSON is
checked as Grafana declares it: an unknown key is an error (excess-property checks), and so
is a wrong type or a value outside an enum.

The dashboard type leaves panel `options`, `fieldConfig.defaults.custom` and `targets` open
(`Record<string, unknown>`), because they depend on the panel plugin and the data source;
they are checked separately: options and custom field config against the panel plugin's
types, queries against the fields of Grafana's Prometheus query (`PromQuery`, which
`@grafana/schema` does not ship: declared below from Grafana's Prometheus data source) or
SQL query (`SQLQuery`, likewise), the data links of field overrides against Grafana's
`DataLink`, and the Prometheus annotation's extra fields likewise.

The packages are pinned in tests/grafana/schema/package.json and its lockfile, installed
by `scripts/grafana_schema.sh` (`npm ci`).
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SCHEMA_DIR = Path(__file__).parent / "schema"
NODE_MODULES = SCHEMA_DIR / "node_modules"
TSC = NODE_MODULES / "typescript" / "bin" / "tsc"

_PANEL_TYPES = {
    "timeseries": "TimeSeries",
    "state-timeline": "StateTimeline",
    "table": "Table",
}
_RAW = "@grafana/schema/dist/esm/raw/composable"
_QUERY_TYPES = {"prometheus": "PromQuery", "grafana-postgresql-datasource": "SQLQuery"}
"""The query type of each data source the dashboard reads, declared below."""

HEADER = f"""\
import type {{
  AnnotationQuery, Dashboard, DataQuery, Panel, RowPanel,
}} from '@grafana/schema';
import type * as TimeSeries from '{_RAW}/timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen';
import type * as StateTimeline from
  '{_RAW}/statetimeline/panelcfg/x/StateTimelinePanelCfg_types.gen';
import type * as Table from '{_RAW}/table/panelcfg/x/TablePanelCfg_types.gen';

// The types as JSON spells them: a string enum's values instead of the enum (a numeric
// enum takes its numbers as they are).
type Json<T> = T extends string
  ? `${{T}}`
  : T extends number | boolean | null | undefined
    ? T
    : T extends Array<infer U>
      ? Array<Json<U>>
      : T extends object
        ? {{ [K in keyof T]: Json<T[K]> }}
        : T;

// The query of Grafana's Prometheus data source (public/app/plugins/datasource/prometheus,
// PromQuery); @grafana/schema ships DataQuery, its base.
interface PromQuery extends DataQuery {{
  expr: string;
  legendFormat?: string;
  range?: boolean;
  instant?: boolean;
  exemplar?: boolean;
  format?: 'time_series' | 'table' | 'heatmap';
  interval?: string;
  intervalFactor?: number;
  editorMode?: 'code' | 'builder';
}}

// The query of Grafana's SQL data sources (packages/grafana-sql, SQLQuery): PostgreSQL's.
interface SQLQuery extends DataQuery {{
  alias?: string;
  format?: 'time_series' | 'table';
  rawSql?: string;
  dataset?: string;
  table?: string;
  editorMode?: 'builder' | 'code';
  rawQuery?: boolean;
}}

// A data link of a field (packages/grafana-data, DataLink and InternalDataLink): the
// value of a `links` property in field config; @grafana/schema leaves it `unknown`.
interface DataLink {{
  title: string;
  url: string;
  targetBlank?: boolean;
  internal?: {{ datasourceUid: string; datasourceName: string; query: DataQuery | object }};
}}

// Its annotation: the query in `target`, the event fields beside it (Prometheus's
// AnnotationSupport reads titleFormat, textFormat, tagKeys and useValueForTime).
interface PromAnnotation extends AnnotationQuery<PromQuery> {{
  titleFormat?: string;
  textFormat?: string;
  tagKeys?: string;
  useValueForTime?: boolean;
}}
"""


class SchemaToolMissingError(RuntimeError):
    """The npm packages are not installed."""


def typescript(dashboards: Mapping[str, dict[str, Any]]) -> str:
    """The TypeScript source that type-checks each dashboard (see the module docstring); the
    comment above every check begins with the dashboard's name in `dashboards`."""
    lines = [HEADER]
    for name, dashboard in dashboards.items():
        _dashboard(lines, name, dashboard)
    return "\n".join(lines) + "\n"


def _dashboard(lines: list[str], name: str, dashboard: dict[str, Any]) -> None:
    count = 0
    stem = f"_{len(lines)}"

    def check(what: str, value: Any, type_: str) -> str:
        nonlocal count
        count += 1
        const = f"{stem}_{count}"
        lines.append(f"// {name}: {what}")
        lines.append(f"const {const} = {json.dumps(value, indent=2)} satisfies Json<{type_}>;")
        return const

    annotations = []
    for annotation in dashboard.get("annotations", {}).get("list", []):
        what = f"annotation {annotation.get('name')!r}"
        prometheus = annotation.get("datasource", {}).get("type") == "prometheus"
        annotations.append(
            check(what, annotation, "PromAnnotation" if prometheus else "AnnotationQuery")
        )
    panels = []
    for panel in dashboard.get("panels", []):
        title, kind = panel.get("title"), panel.get("type")
        if kind == "row":
            panels.append(check(f"row {title!r}", panel, "RowPanel"))
            continue
        panels.append(check(f"panel {title!r}", panel, "Panel"))
        plugin = _PANEL_TYPES.get(kind)
        if plugin is None:
            lines.append(f"// {name}: panel {title!r}: no types for panel type {kind!r}")
            lines.append(f"const {stem}_type_{count}: never = {json.dumps(kind)};")
            continue
        check(f"panel {title!r} options", panel.get("options", {}), f"{plugin}.Options")
        custom = panel.get("fieldConfig", {}).get("defaults", {}).get("custom")
        if custom is not None:
            check(f"panel {title!r} fieldConfig.defaults.custom", custom, f"{plugin}.FieldConfig")
        for target in panel.get("targets", []):
            kind = target.get("datasource", {}).get("type")
            query = _QUERY_TYPES.get(kind, "never")
            check(f"panel {title!r} target {target.get('refId')}", target, query)
        for i, override in enumerate(panel.get("fieldConfig", {}).get("overrides", [])):
            for prop in override.get("properties", []):
                if prop.get("id") == "links":
                    check(f"panel {title!r} override {i} links", prop.get("value"), "DataLink[]")
    rest = {k: v for k, v in dashboard.items() if k not in ("annotations", "panels")}
    body = json.dumps(rest, indent=2)[:-2]
    lines.append(f"// {name}: dashboard")
    lines.append(
        f"export const {stem} = {body},\n"
        f'  "annotations": {{"list": [{", ".join(annotations)}]}},\n'
        f'  "panels": [{", ".join(panels)}]\n}} satisfies Json<Dashboard>;'
    )


def _tsconfig() -> dict[str, Any]:
    return {
        "compilerOptions": {
            "strict": True,
            "noEmit": True,
            "target": "es2022",
            "module": "esnext",
            "moduleResolution": "bundler",
            "skipLibCheck": True,
            "types": [],
        },
        "files": ["check.ts"],
    }


def errors(dashboard: dict[str, Any]) -> list[str]:
    """The compiler's complaints about `dashboard`, each named by the part it concerns."""
    return errors_of({"dashboard": dashboard})["dashboard"]


def errors_of(dashboards: Mapping[str, dict[str, Any]]) -> dict[str, list[str]]:
    """The complaints about each of `dashboards` (by name), in one run of the compiler."""
    if not TSC.exists():
        raise SchemaToolMissingError(
            f"{TSC} is missing: run scripts/grafana_schema.sh (npm ci in {SCHEMA_DIR})"
        )
    source = typescript(dashboards)
    with tempfile.TemporaryDirectory(prefix="ragstream-grafana-schema-") as tmp:
        work = Path(tmp)
        (work / "node_modules").symlink_to(NODE_MODULES.resolve(), target_is_directory=True)
        (work / "check.ts").write_text(source)
        (work / "tsconfig.json").write_text(json.dumps(_tsconfig()))
        proc = subprocess.run(
            ["node", str(TSC), "-p", str(work / "tsconfig.json"), "--pretty", "false"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    out = proc.stdout + proc.stderr
    found: dict[str, list[str]] = {name: [] for name in dashboards}
    if proc.returncode == 0:
        return found
    source_lines = source.splitlines()
    matches = list(
        re.finditer(r"^(?:\S*/)?check\.ts\((\d+),(\d+)\): (error .*)$", out, re.MULTILINE)
    )
    if not matches:
        raise RuntimeError(f"tsc exited {proc.returncode}: {out.strip()}")
    for match in matches:
        line = int(match.group(1))
        comment = next(
            (
                source_lines[i][3:]
                for i in range(line - 1, -1, -1)
                if source_lines[i].startswith("// ")
            ),
            "",
        )
        name, _, where = comment.partition(": ")
        message = match.group(3)
        if len(message) > 400:
            message = message[:400] + " ..."
        found.setdefault(name, []).append(f"{where}: {message}  [{source_lines[line - 1].strip()}]")
    return found
