"""Cron schedules: when a schedule fires next, in its time zone.

The expressions are read by `cronsim` (BSD): five fields (minute, hour, day of
month, month, day of week), or six with seconds first (`*/5 * * * * *`).
cronsim was chosen over croniter for its handling of daylight-saving changes,
which is Debian cron's: a schedule at a fixed wall-clock time that falls in
the gap of a spring-forward change fires at the first instant after the gap
(02:30 becomes 03:00), and one that falls in the hour repeated in autumn fires
once, at its first occurrence; croniter fires such a time twice. A schedule
that names no fixed time (`*/15 * * * *`) goes by elapsed time across a change.
"""

from __future__ import annotations

import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from ._api import Refused

__all__ = ("check_schedule", "next_tick", "zone")


def zone(name: str | None) -> datetime.tzinfo:
    """The IANA time zone `name` (UTC when None); 422 naming it when there is none."""
    if name is None or name == "UTC":
        return datetime.UTC
    if not isinstance(name, str):
        raise Refused(422, f"timezone {name!r} is not an IANA time zone name")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise Refused(422, f"timezone {name!r} is not an IANA time zone") from exc


def check_schedule(schedule: object, timezone: str | None) -> str:
    """`schedule` if it is a cron expression and `timezone` a time zone; 422 naming the
    one that is not."""
    where = zone(timezone)
    if not isinstance(schedule, str):
        raise Refused(422, f"schedule {schedule!r} is not a cron expression")
    try:
        CronSim(schedule, datetime.datetime.now(where))
    except CronSimError as exc:
        raise Refused(422, f"schedule {schedule!r} is not a cron expression: {exc}") from exc
    return schedule


def next_tick(schedule: str, timezone: str | None, after: float) -> float | None:
    """The first instant strictly after `after` (a Unix time) at which `schedule` fires,
    read in `timezone`; None when it never fires again (cronsim looks 50 years ahead)."""
    start = datetime.datetime.fromtimestamp(after, tz=zone(timezone))
    try:
        return next(CronSim(schedule, start)).timestamp()
    except StopIteration:
        return None
    except CronSimError as exc:
        raise Refused(422, f"schedule {schedule!r} is not a cron expression: {exc}") from exc
