"""The scheduler, for the instance's operators (``DASHBOARD_OPERATORS``, else the
application's owner): its jobs (by state and function), schedules and run history, with
retry, cancel, pause, resume and trigger — what ``python -m scheduler`` shows and does, in a
browser. Anyone else gets "not found"."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from aiohttp import web

from scheduler import JobState, ScheduleNotFound

from .core import Dashboard, Viewer, form_of

log = logging.getLogger(__name__)

JOB_STATES = [s.value for s in JobState]
PAGE = 50


def at(ts: float | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC)


def routes(d: Dashboard) -> list[web.RouteDef]:
    def operator(viewer: Viewer) -> None:
        if not viewer.operator:
            raise web.HTTPNotFound()

    async def jobs(request: web.Request, viewer: Viewer) -> web.StreamResponse:
        operator(viewer)
        state = request.query.get("state", "")
        fn = request.query.get("fn", "").strip()
        before = request.query.get("before", "")
        found = await d.sched.list_jobs(
            state=state if state in JOB_STATES else None,
            fn=fn or None,
            before_id=int(before) if before.isdigit() else None,
            limit=PAGE,
        )
        return d.render(
            "ops_jobs.html", viewer, jobs=found, state=state, fn=fn, states=JOB_STATES,
            more=len(found) == PAGE, flash=await d.flash(viewer),
        )  # fmt: skip

    async def job(request: web.Request, viewer: Viewer) -> web.StreamResponse:
        operator(viewer)
        raw = request.match_info["job_id"]
        found = await d.sched.get_job(int(raw)) if raw.isdigit() else None
        if found is None:
            raise web.HTTPNotFound()
        fields = {f: getattr(found, f) for f in found.__dataclass_fields__}
        history = await d.sched.runs(job_id=found.id, limit=PAGE)
        return d.render(
            "ops_job.html", viewer, job=found, fields=fields, runs=history, at=at,
            flash=await d.flash(viewer),
        )  # fmt: skip

    async def runs(request: web.Request, viewer: Viewer) -> web.StreamResponse:
        operator(viewer)
        fn = request.query.get("fn", "").strip()
        job_raw = request.query.get("job", "").strip()
        found = await d.sched.runs(
            job_id=int(job_raw) if job_raw.isdigit() else None, fn=fn or None, limit=PAGE
        )
        return d.render("ops_runs.html", viewer, runs=found, fn=fn, job=job_raw, at=at)

    async def job_action(request: web.Request, viewer: Viewer) -> web.StreamResponse:
        operator(viewer)
        raw, action = request.match_info["job_id"], request.match_info["action"]
        found = await d.sched.get_job(int(raw)) if raw.isdigit() else None
        if found is None:
            raise web.HTTPNotFound()
        if action == "cancel":
            done = await d.sched.cancel(found.id)
            was = found.state.value
            answer = (
                f"Job {found.id} canceled."
                if done
                else f"Job {found.id} was {was}; its pending descendants are canceled."
            )
        elif action == "retry":
            done = await d.sched.retry(found.id)
            answer = (
                f"Job {found.id} is pending again."
                if done
                else f"Job {found.id} is {found.state.value}; only failed or canceled jobs "
                "can be retried."
            )
        else:
            raise web.HTTPNotFound()
        log.info(
            "job %d: %s by operator %d on the dashboard", found.id, action, viewer.session.user_id
        )
        await d.sessions.set_flash(viewer.session, answer)
        raise web.HTTPSeeOther(f"/ops/jobs/{found.id}")

    async def schedules(request: web.Request, viewer: Viewer) -> web.StreamResponse:
        operator(viewer)
        found = await d.sched.schedules.list()
        return d.render("ops_schedules.html", viewer, schedules=found, flash=await d.flash(viewer))

    async def schedule_action(request: web.Request, viewer: Viewer) -> web.StreamResponse:
        operator(viewer)
        form = form_of(request)
        name = str(form.get("name", ""))
        action = request.match_info["action"]
        try:
            if action == "pause":
                done = await d.sched.schedules.pause(name)
                answer = f"Schedule {name!r} " + ("paused." if done else "was already paused.")
            elif action == "resume":
                done = await d.sched.schedules.resume(name)
                answer = f"Schedule {name!r} " + ("resumed." if done else "was not paused.")
            elif action == "trigger":
                job_id = await d.sched.schedules.trigger(name)
                answer = f"Schedule {name!r} triggered: job {job_id}."
            else:
                raise web.HTTPNotFound()
        except ScheduleNotFound:
            raise web.HTTPNotFound() from None
        log.info(
            "schedule %r: %s by operator %d on the dashboard", name, action, viewer.session.user_id
        )
        await d.sessions.set_flash(viewer.session, answer)
        raise web.HTTPSeeOther("/ops/schedules")

    return [
        web.get("/ops", d.page(jobs)),
        web.get("/ops/jobs", d.page(jobs)),
        web.get("/ops/jobs/{job_id}", d.page(job)),
        web.post("/ops/jobs/{job_id}/{action}", d.page(job_action)),
        web.get("/ops/runs", d.page(runs)),
        web.get("/ops/schedules", d.page(schedules)),
        web.post("/ops/schedules/{action}", d.page(schedule_action)),
    ]
