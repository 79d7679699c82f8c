"""The scheduler, for the instance's operators (``DASHBOARD_OPERATORS``, else the
application's owner): its jobs (by state and function), schedules and run history, with
retry, cancel, pause, resume and trigger — what ``python -m scheduler`` shows and does, in a
browser; and one server's limits, raised or lowered (what ``python -m bot limits`` does).
Anyone else gets "not found"."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from aiohttp import web
from babel.numbers import format_decimal
from babel.units import format_unit

from scheduler import Job, JobState, RunOutcome, ScheduleNotFound

from ...announcements import LIMIT_OPTIONS, BadLimit, limit_lines
from ...i18n import current_locale, t
from ...limits import MAX_TEXT_OPTION
from ...models import LIMIT_SETTINGS, GuildLimits, Limits
from .core import CONFIRMED, Confirmation, Fields, Viewer, form_of
from .pages import Pages, get, post
from .text import babel_locale

log = logging.getLogger(__name__)

JOB_STATES = [s.value for s in JobState]
PAGE = 50


def at(ts: float | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC)


def job_state_words() -> dict[str, str]:
    """A job's states in the viewer's language, by their names (what the filter sends)."""
    words = {
        "pending": t("pending"),
        "held": t("held"),
        "in_progress": t("in progress"),
        "success": t("success"),
        "failed": t("failed"),
        "canceled": t("canceled"),
    }
    return {state: words.get(state, state) for state in JOB_STATES}


def run_outcome_words() -> dict[str, str]:
    """A run's outcomes in the viewer's language, by their names."""
    words = {
        "success": t("success"),
        "retry": t("retry"),
        "failed": t("failed"),
        "released": t("released"),
        "discarded": t("discarded"),
        "lease_lost": t("lease lost"),
    }
    return {outcome.value: words.get(outcome.value, outcome.value) for outcome in RunOutcome}


def limit_units() -> dict[str, str]:
    """The limits' units in the viewer's language."""
    return {"MiB": "MiB", "minutes": t("minutes")}


def limit_words(limits: Limits, override: GuildLimits | None) -> list[str]:
    """Each limit of a server as :func:`~bot.announcements.limit_lines` says it (in English,
    word for word), in the viewer's language: its number as the language writes it, its
    unit, and whether it is the server's own or the instance's setting."""
    spoken = babel_locale(current_locale())
    if spoken is None:
        return limit_lines(limits, override)
    units = limit_units()
    lines = []
    for option in LIMIT_OPTIONS:
        value = round(getattr(limits, option.field) / option.scale, 2)
        if option.unit == "minutes":  # the language's own form for the count (1 Minute)
            shown = format_unit(value, "duration-minute", length="long", locale=spoken)
        else:
            shown = f"{format_decimal(value, locale=spoken)} {units.get(option.unit, option.unit)}"
        own = override is not None and getattr(override, option.field) is not None
        where = t("set for this server") if own else LIMIT_SETTINGS[option.field]
        lines.append(f"{option.name}: {shown.rstrip()} ({where})")
    return lines


LIMITS_FORM = Fields(dict.fromkeys(("guild", *(o.name for o in LIMIT_OPTIONS)), MAX_TEXT_OPTION))
"""The limits' form: the server, and a number for each limit."""


def operator(viewer: Viewer) -> None:
    """Not found for anyone but an operator."""
    if not viewer.operator:
        raise web.HTTPNotFound()


class OperatorPages(Pages):
    """The scheduler's jobs, runs and schedules, and what an operator may do to them."""

    @get("/ops")
    @get("/ops/jobs")
    async def jobs(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """A page of jobs, newest first, by state and function."""
        operator(viewer)
        state = request.query.get("state", "")
        fn = request.query.get("fn", "").strip()
        before = request.query.get("before", "")
        found = await self.d.sched.list_jobs(
            state=state if state in JOB_STATES else None,
            fn=fn or None,
            before_id=int(before) if before.isdigit() else None,
            limit=PAGE,
        )
        return self.d.render(
            "ops_jobs.html", viewer, jobs=found, state=state, fn=fn, states=job_state_words(),
            more=len(found) == PAGE, flash=await self.d.flash(viewer),
        )  # fmt: skip

    @get("/ops/jobs/{job_id}")
    async def job(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """One job, every field, and its run history."""
        operator(viewer)
        found = await self.job_in(request)
        fields = {f: getattr(found, f) for f in found.__dataclass_fields__}
        history = await self.d.sched.runs(job_id=found.id, limit=PAGE)
        return self.d.render(
            "ops_job.html", viewer, job=found, fields=fields, runs=history, at=at,
            states=job_state_words(), outcomes=run_outcome_words(),
            flash=await self.d.flash(viewer),
        )  # fmt: skip

    @get("/ops/shards")
    async def shards(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """The gateway shards: which instance holds each, and this one's sessions."""
        operator(viewer)
        gateway = self.d.gateway
        if gateway is None:
            raise web.HTTPNotFound()
        holders = await gateway.holders()
        return self.d.render(
            "ops_shards.html", viewer, states=gateway.states(), holders=holders,
            instance=gateway.instance, mode=gateway.mode, problems=gateway.problems(),
        )  # fmt: skip

    @get("/ops/runs")
    async def runs(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """The latest runs, by job and function."""
        operator(viewer)
        fn = request.query.get("fn", "").strip()
        job_raw = request.query.get("job", "").strip()
        found = await self.d.sched.runs(
            job_id=int(job_raw) if job_raw.isdigit() else None, fn=fn or None, limit=PAGE
        )
        return self.d.render(
            "ops_runs.html", viewer, runs=found, fn=fn, job=job_raw, at=at,
            outcomes=run_outcome_words(),
        )  # fmt: skip

    @post("/ops/jobs/{job_id}/{action:cancel|retry}", form=CONFIRMED)
    async def job_action(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """Cancel a job (and its pending descendants), or retry a failed or canceled one."""
        operator(viewer)
        found = await self.job_in(request)
        action = request.match_info["action"]
        if action == "cancel":
            ask = Confirmation(
                title=t("Cancel job {id}?", id=found.id),
                question=t(
                    "Job {id} ({fn}) and its pending descendants are canceled: they will not "
                    "run. A canceled job can be retried later.", id=found.id, fn=found.fn,
                ),
                button=t("Cancel job {id}", id=found.id),
                back=f"/ops/jobs/{found.id}",
                fields={},
            )  # fmt: skip
            asked = self.d.confirm_first(request, viewer, ask)
            if asked is not None:
                return asked
            done = await self.d.sched.cancel(found.id)
            was = found.state.value
            answer = (
                t("Job {id} canceled.", id=found.id)
                if done
                else t(
                    "Job {id} was {state}; its pending descendants are canceled.",
                    id=found.id, state=job_state_words().get(was, was),
                )
            )  # fmt: skip
        else:
            done = await self.d.sched.retry(found.id)
            state = found.state.value
            answer = (
                t("Job {id} is pending again.", id=found.id)
                if done
                else t(
                    "Job {id} is {state}; only failed or canceled jobs can be retried.",
                    id=found.id, state=job_state_words().get(state, state),
                )
            )  # fmt: skip
        log.info(
            "job %d: %s by operator %d on the dashboard", found.id, action, viewer.session.user_id
        )
        await self.d.sessions.set_flash(viewer.session, answer)
        raise web.HTTPSeeOther(f"/ops/jobs/{found.id}")

    async def job_in(self, request: web.Request) -> Job:
        """The job whose id is in the address (else 404)."""
        raw = request.match_info["job_id"]
        found = await self.d.sched.get_job(int(raw)) if raw.isdigit() else None
        if found is None:
            raise web.HTTPNotFound()
        return found

    @get("/ops/schedules")
    async def schedules(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        operator(viewer)
        found = await self.d.sched.schedules.list()
        return self.d.render(
            "ops_schedules.html", viewer, schedules=found, flash=await self.d.flash(viewer)
        )

    @post("/ops/schedules/{action:pause|resume|trigger}", form=Fields({"name": MAX_TEXT_OPTION}))
    async def schedule_action(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """Pause, resume or trigger the schedule named in the form."""
        operator(viewer)
        schedules = self.d.sched.schedules
        name = str(form_of(request).get("name", ""))
        action = request.match_info["action"]
        try:
            if action == "pause":
                done = await schedules.pause(name)
                answer = (
                    t("Schedule {name} paused.", name=repr(name))
                    if done
                    else t("Schedule {name} was already paused.", name=repr(name))
                )
            elif action == "resume":
                done = await schedules.resume(name)
                answer = (
                    t("Schedule {name} resumed.", name=repr(name))
                    if done
                    else t("Schedule {name} was not paused.", name=repr(name))
                )
            else:
                job_id = await schedules.trigger(name)
                answer = t("Schedule {name} triggered: job {id}.", name=repr(name), id=job_id)
        except ScheduleNotFound:
            raise web.HTTPNotFound() from None
        log.info(
            "schedule %r: %s by operator %d on the dashboard", name, action, viewer.session.user_id
        )
        await self.d.sessions.set_flash(viewer.session, answer)
        raise web.HTTPSeeOther("/ops/schedules")

    @get("/ops/limits")
    async def limits(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """One server's limits (``?guild=ID``), each with what sets it, and a form to change
        them."""
        operator(viewer)
        raw = request.query.get("guild", "").strip()
        guild_id = int(raw) if raw.isdigit() else None
        lines: list[str] = []
        values: dict[str, str] = {}
        if guild_id is not None:
            override, limits = await self.d.announcements.guild_limits(guild_id)
            lines = limit_words(limits, override)
            for option in LIMIT_OPTIONS:
                own = None if override is None else getattr(override, option.field)
                values[option.name] = "" if own is None else f"{own / option.scale:g}"
        return self.d.render(
            "ops_limits.html", viewer, asked=raw, guild_id=guild_id, lines=lines,
            options=LIMIT_OPTIONS, units=limit_units(), values=values,
            flash=await self.d.flash(viewer),
        )  # fmt: skip

    @post("/ops/limits", form=LIMITS_FORM)
    async def set_limits(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """Set the server's limits from the form: a number in the limit's unit, or empty
        (or ``default``) for the instance's setting."""
        operator(viewer)
        form = form_of(request)
        raw = form.get("guild").strip()
        if not raw.isdigit():
            raise web.HTTPNotFound()
        given = {
            o.name: form.fields[o.name].strip() or "default"
            for o in LIMIT_OPTIONS
            if o.name in form.fields
        }
        try:
            _, limits = await self.d.announcements.change_guild_limits(int(raw), given)
        except BadLimit as exc:
            answer = t("Nothing was changed: {reason}.", reason=exc)
        else:
            answer = t(
                "Limits of server {id} set: {limits}",
                id=raw, limits="; ".join(limit_words(limits, None)),
            )  # fmt: skip
            log.info(
                "limits of server %s set by operator %d on the dashboard: %s",
                raw, viewer.session.user_id, given,
            )  # fmt: skip
        await self.d.sessions.set_flash(viewer.session, answer)
        raise web.HTTPSeeOther(f"/ops/limits?guild={raw}")
