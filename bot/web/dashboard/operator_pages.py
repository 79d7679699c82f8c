"""The scheduler, for the instance's operators (``DASHBOARD_OPERATORS``, else the
application's owner): its jobs (by state and function), schedules and run history, with
retry, cancel, pause, resume and trigger — what ``python -m scheduler`` shows and does, in a
browser; and one server's limits, raised or lowered (what ``python -m bot limits`` does).
Anyone else gets "not found"."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from aiohttp import web

from scheduler import Job, JobState, ScheduleNotFound

from ...announcements import LIMIT_OPTIONS, BadLimit, limit_lines
from .core import Viewer, form_of
from .pages import Pages, get, post

log = logging.getLogger(__name__)

JOB_STATES = [s.value for s in JobState]
PAGE = 50


def at(ts: float | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC)


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
            "ops_jobs.html", viewer, jobs=found, state=state, fn=fn, states=JOB_STATES,
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
        return self.d.render("ops_runs.html", viewer, runs=found, fn=fn, job=job_raw, at=at)

    @post("/ops/jobs/{job_id}/{action:cancel|retry}")
    async def job_action(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """Cancel a job (and its pending descendants), or retry a failed or canceled one."""
        operator(viewer)
        found = await self.job_in(request)
        action = request.match_info["action"]
        if action == "cancel":
            done = await self.d.sched.cancel(found.id)
            was = found.state.value
            answer = (
                f"Job {found.id} canceled."
                if done
                else f"Job {found.id} was {was}; its pending descendants are canceled."
            )
        else:
            done = await self.d.sched.retry(found.id)
            answer = (
                f"Job {found.id} is pending again."
                if done
                else f"Job {found.id} is {found.state.value}; only failed or canceled jobs "
                "can be retried."
            )
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

    @post("/ops/schedules/{action:pause|resume|trigger}")
    async def schedule_action(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """Pause, resume or trigger the schedule named in the form."""
        operator(viewer)
        schedules = self.d.sched.schedules
        name = str(form_of(request).get("name", ""))
        action = request.match_info["action"]
        try:
            if action == "pause":
                done = await schedules.pause(name)
                answer = f"Schedule {name!r} " + ("paused." if done else "was already paused.")
            elif action == "resume":
                done = await schedules.resume(name)
                answer = f"Schedule {name!r} " + ("resumed." if done else "was not paused.")
            else:
                job_id = await schedules.trigger(name)
                answer = f"Schedule {name!r} triggered: job {job_id}."
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
            lines = limit_lines(limits, override)
            for option in LIMIT_OPTIONS:
                own = None if override is None else getattr(override, option.field)
                values[option.name] = "" if own is None else f"{own / option.scale:g}"
        return self.d.render(
            "ops_limits.html", viewer, asked=raw, guild_id=guild_id, lines=lines,
            options=LIMIT_OPTIONS, values=values, flash=await self.d.flash(viewer),
        )  # fmt: skip

    @post("/ops/limits")
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
            answer = f"Nothing was changed: {exc}."
        else:
            answer = "Limits of server " + raw + " set: " + "; ".join(limit_lines(limits, None))
            log.info(
                "limits of server %s set by operator %d on the dashboard: %s",
                raw, viewer.session.user_id, given,
            )  # fmt: skip
        await self.d.sessions.set_flash(viewer.session, answer)
        raise web.HTTPSeeOther(f"/ops/limits?guild={raw}")
