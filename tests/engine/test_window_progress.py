"""WindowProgress: state moves over the contiguous run of finished windows only, and never backwards."""

from datetime import datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from framework.engine.window_progress import WindowProgress

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
DAY = timedelta(days=1)


def windows(n):
    return [(T0 + i * DAY, T0 + (i + 1) * DAY - timedelta(microseconds=1)) for i in range(n)]


def test_state_moves_only_over_the_finished_prefix():
    p = WindowProgress(windows(3))
    p.observe(1, T0 + DAY + timedelta(hours=5))
    p.finish(1)
    assert p.value() is None  # window 0 is not finished
    p.observe(0, T0 + timedelta(hours=3))
    p.finish(0)
    assert p.value() == T0 + DAY + timedelta(hours=5)
    p.finish(2)
    assert p.complete


def test_a_newer_record_cannot_carry_state_past_an_unread_window():
    p = WindowProgress(windows(3))
    p.observe(0, T0 + 10 * DAY)  # the API returned something newer than the window
    p.finish(0)
    assert p.value() == windows(3)[0][1]
    p.finish(1)
    p.finish(2)
    assert p.value() == T0 + 10 * DAY  # once all is read, the latest value seen


def test_state_never_moves_backwards():
    prior = T0 + 5 * DAY
    p = WindowProgress(windows(3), prior)  # windows start before prior (lookback)
    p.observe(0, T0)
    p.finish(0)
    assert p.value() == prior


@given(st.permutations(list(range(6))), st.integers(0, 6))
def test_any_finishing_order_never_skips_an_unfinished_window(order, finished):
    ws = windows(6)
    p = WindowProgress(ws)
    for i in range(6):
        p.observe(i, ws[i][1])
    for i in order[:finished]:
        p.finish(i)
    value = p.value()
    unfinished = [i for i in range(6) if not p.done[i]]
    if unfinished:
        first = unfinished[0]
        assert value is None or value < ws[first][0]
    else:
        assert value == ws[-1][1]
