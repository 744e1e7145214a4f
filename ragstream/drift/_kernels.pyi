from typing_extensions import Buffer

_Rows = list[tuple[list[float], list[float]]]

def adwin_update(
    rows: _Rows,
    values: Buffer,
    width: int,
    total: float,
    variance: float,
    tick: int,
    score: float,
    clock: int,
    grace_period: int,
    max_buckets: int,
    max_window: int,
    min_window_length: int,
    delta: float,
    direction: int,
    /,
) -> tuple[_Rows, int, float, float, int, float, list[int]]:
    """`Adwin.update`'s loop from the given state (direction 0 down, 1 up, 2 both): the
    new rows and state, and the offsets of the values at which a change was detected."""

def ph_segment(
    values: Buffer,
    n: int,
    mean: float,
    m2: float,
    g_down: float,
    g_up: float,
    delta: float,
    threshold: float,
    min_instances: int,
    min_std: float,
    watch_down: bool,
    watch_up: bool,
    /,
) -> tuple[int, int, float, float, float, float]:
    """`PageHinkley._segment_numpy` from the given state: (hit, n, mean, m2, g_down, g_up),
    hit -1 when no value raised an alarm (the state then advanced past the values)."""
