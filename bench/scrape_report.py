"""The exposition benchmark's table: scrape times and memory by size, throughput under scrapes."""

from __future__ import annotations

from typing import Any

__all__ = ["render"]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def _mib(n: float) -> str:
    return f"{n / 2**20:.1f}"


def _verdict(ok: bool) -> str:
    return "pass" if ok else "MISS"


def _sizes(report: dict[str, Any]) -> list[str]:
    target = report["scrape_target"]
    largest = max(r["target"] for r in report["sizes"])
    lines = [
        "| target | label sets | series | format | body KiB | scrape p50 / p90 / max ms "
        "| CPU p50 ms | prometheus_client's encoder p50 ms | HTTP GET p50 / p90 ms | RSS MiB "
        "| windows MiB | target | result | load |",
        "|---:|---:|---:|---|---:|---|---:|---:|---|---:|---:|---|---|---|",
    ]
    for r in report["sizes"]:
        checked = r["target"] == largest
        goal = f"p50 < {_ms(target)} ms" if checked else "-"
        for name in ("text", "openmetrics"):
            f = r[name]
            s, h = f["scrape"], f["http"]
            verdict = _verdict(s["p50"] < target) if checked else "-"
            lines.append(
                f"| {r['target']:,} | {r['labelsets']} | {r['series']:,} | {name} | "
                f"{f['body_bytes'] / 1024:.0f} | {_ms(s['p50'])} / {_ms(s['p90'])} / "
                f"{_ms(s['max'])} | {_ms(f['cpu']['p50'])} | "
                f"{_ms(f['generic_encoder']['p50'])} | {_ms(h['p50'])} / {_ms(h['p90'])} | "
                f"{_mib(r['rss'])} | {_mib(r['store_nbytes'])} | {goal} | {verdict} | "
                f"{r['load'][0]:.1f}-{r['load'][1]:.1f} |"
            )
    return lines


def _throughput(report: dict[str, Any]) -> list[str]:
    t = report["throughput"]
    loads = [x for run in t["runs"] for x in run["load"]]
    goal = report["ratio_target"]
    lines = [
        "",
        f"Consumption with a scrape every {t['interval']:g} s ({t['labelsets']} label sets, "
        f"{t['runs'][0]['messages']:,} messages per run, {len(t['runs']) // 2} interleaved "
        f"pairs, load {min(loads):.1f}-{max(loads):.1f}):",
        "",
        "| measure | run | median | min - max | per run, in order | ratio scraped / not "
        "| per pair | target | result |",
        "|---|---|---:|---|---|---:|---|---|---|",
    ]
    for measure, key in (("events/s (wall)", "events_per_s"), ("events/CPU-s", "events_per_cpu_s")):
        m = t[key]
        pairs = ", ".join(f"{x:.2f}" for x in m["pair_ratios"])
        for name, scraped in (("no scrapes", False), ("scraped", True)):
            stats = m["on" if scraped else "off"]
            runs = ", ".join(f"{r[key]:,.0f}" for r in t["runs"] if r["scrape"] is scraped)
            tail = (
                f"{m['ratio']:.3f} | {pairs} | >= {goal:.2f} | {_verdict(m['ratio'] >= goal)}"
                if scraped
                else " | | |"
            )
            lines.append(
                f"| {measure} | {name} | {stats['median']:,.0f} | "
                f"{stats['min']:,.0f} - {stats['max']:,.0f} | {runs} | {tail} |"
            )
    served = [r["client"].get("scrapes", 0) for r in t["runs"] if r["scrape"]]
    latency = [r["client"].get("p50", 0.0) for r in t["runs"] if r["scrape"]]
    seconds = [r["seconds"] for r in t["runs"] if r["scrape"]]
    lines += [
        "",
        f"scrapes per scraped run: {', '.join(f'{s:.0f}' for s in served)}; "
        f"their seconds: {', '.join(f'{x:.1f}' for x in seconds)}; "
        f"client-side scrape p50 per run (ms): {', '.join(_ms(x) for x in latency)}",
    ]
    return lines


def _profiles(report: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for r in report["sizes"]:
        p = r.get("profile")
        if p is None:
            continue
        total = p["total"]
        lines += [
            "",
            f"Profile of one OpenMetrics scrape at {r['series']:,} series (cProfile, mean of "
            f"{p['reps']}; "
            f"profiled total {_ms(total)} ms):",
        ]
        for name, key in (
            ("windows reads (WindowStore)", "windows_reads"),
            ("the rest of the families", "families"),
            ("rendering (TextRenderer)", "rendering"),
        ):
            lines.append(f"  {name:34} {_ms(p[key]):>8} ms  {100 * p[key] / total:5.1f}%")
        lines.append("  top functions by own time (ms):")
        for f in p["top"]:
            lines.append(f"    {_ms(f['tottime']):>8}  {f['function']}")
    return lines


def render(report: dict[str, Any]) -> str:
    """Markdown tables (and profiles) for the terminal and for docs/benchmarks.md."""
    head = [f"command: {report['command']}", ""]
    return "\n".join([*head, *_sizes(report), *_throughput(report), *_profiles(report)])
