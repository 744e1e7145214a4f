"""The drift families: `ragstream_drift_score`, `ragstream_drift_alarm` (0/1) and
`ragstream_drift_detections_total`, per metric, detector and label set.

Windowed detectors (`zscore`, `psi`) were evaluated by the engine on its clock; a scrape
reads their last evaluation (`WindowedDrift.read`) and changes nothing, with `window` the
short window of the pair and `reference` the long one. Sequential detectors
(`page_hinkley`, `adwin`) were fed the final per-query values by the engine; their
`window` and `reference` are empty, and a label set's score and alarm are those of its
partitions held here taken together (the largest score; the alarm when any partition's
detector has one).
"""

from __future__ import annotations

import math

from ragstream.exporter.family import PREFIX, Family
from ragstream.pipeline.engine import Engine

__all__ = ["drift_families"]

_SCORE_HELP = (
    "Drift statistic: zscore the signed Welch z of the short window against the rest of "
    "the long one, psi the PSI, page_hinkley and adwin the statistic over its alarm level "
    "(1 = alarm)."
)
_ALARM_HELP = (
    "1 while the drift detector's alarm is raised (hysteresis, or held after a detection)."
)
_DETECTIONS_HELP = "Alarms raised by the drift detector (an increase is a new detection)."


def drift_families(engine: Engine) -> list[Family]:
    """The three drift families as the engine holds them (none when drift detection is
    off); a read only."""
    if engine.sequential is None and engine.windowed_drift is None:
        return []
    labels = ("metric", "detector", "window", "reference", *engine.layout.label_keys)
    score = Family(PREFIX + "drift_score", _SCORE_HELP, labels)
    alarm = Family(PREFIX + "drift_alarm", _ALARM_HELP, labels)
    detections = Family(PREFIX + "drift_detections", _DETECTIONS_HELP, labels, kind="counter")

    def add(values: tuple[str, ...], value: float, raised: bool, count: int) -> None:
        if not math.isnan(value):
            score.rows.append((values, value))
        alarm.rows.append((values, 1.0 if raised else 0.0))
        detections.rows.append((values, float(count)))

    if engine.windowed_drift is not None:
        read = engine.windowed_drift.read()
        for result in read.results:
            scores = result.score.tolist()
            alarms = result.alarm.tolist()
            counts = result.detections.tolist()
            for li, labelset in enumerate(read.labelsets):
                for pi, pair in enumerate(read.pairs):
                    for mi, metric in enumerate(result.metrics):
                        values = (metric, result.detector, pair.short_name, pair.long_name)
                        at = scores[li][pi][mi], alarms[li][pi][mi], counts[li][pi][mi]
                        add((*values, *labelset), *at)
    sequential = engine.sequential
    if sequential is not None:
        seen: set[tuple[str, str, tuple[str, ...]]] = set()
        for r in sequential.read():
            key = (r.metric, r.detector, r.labelset)
            seen.add(key)
            n = sequential.detections.get(key, 0)
            add((r.metric, r.detector, "", "", *r.labelset), r.score, r.alarm, n)
        for (metric, detector, labelset), n in sorted(sequential.detections.items()):
            if (metric, detector, labelset) not in seen:  # its partitions have left
                detections.add(metric, detector, "", "", *labelset, value=n)
    return [score, alarm, detections]
