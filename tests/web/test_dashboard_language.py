"""The dashboard in the viewer's language (issue 24), in Chromium against the real bot and
the fake Discord: the browser's ``Accept-Language`` before login, the viewer's Discord
language (OAuth ``identify``) after it, and the language picker over both; every page in
German (the list, an announcement, the form, the templates, the import's dry run, the
operators' pages, the error pages) with none of its English words left, times with German
weekdays, and no page wider than a phone (390 px) in German.

With ``CRIER_SCREENSHOTS=1`` (``scripts/screenshots``) the German pages are saved in
``docs/``: ``dashboard-de.png`` (the list), ``dashboard-de-templates.png`` and
``dashboard-de-narrow.png`` (the list on a phone); a plain run saves nothing."""

from __future__ import annotations

import json
import os
import re
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from bot.models import Template
from bot.parsing.display import example_date
from tests.bot.conftest import NOW

from .conftest import Site, news_draft

if TYPE_CHECKING:
    from tests.fakediscord import User

pytestmark = pytest.mark.asyncio(loop_scope="module")

DOCS = Path(__file__).resolve().parents[2] / "docs"
SCREENSHOTS = "CRIER_SCREENSHOTS"
"""Set to 1 to save the German pages' screenshots in ``docs/`` (``scripts/screenshots``)."""
PHONE = {"width": 390, "height": 844}
"""A phone's viewport (an iPhone 12-15's CSS pixels)."""


async def document_screenshot(page: Any, name: str) -> None:
    """Save the whole page as ``docs/<name>`` when :data:`SCREENSHOTS` asks for it."""
    if os.environ.get(SCREENSHOTS) == "1":
        DOCS.mkdir(exist_ok=True)
        await page.screenshot(path=DOCS / name, full_page=True)


def leftovers(text: str, english: list[str]) -> list[str]:
    """The strings of ``english`` that ``text`` still holds as words (``Filter`` is not in
    ``Filtern``)."""
    return [e for e in english if re.search(rf"(?<!\w){re.escape(e)}(?!\w)", text)]


CHROME = ["Servers", "Log out", "Change language", "Jobs", "Schedules"]
"""The English of every page's frame (``Jobs``: an operator's menu is checked apart)."""


async def german_viewer(
    browser: Any, site: Site, who: User, viewport: dict[str, int] | None = None
) -> tuple[Any, Any]:
    """A browser in English whose viewer's Discord is in German, logged in: the dashboard
    in German from then on."""
    who.locale = "de"
    context = await browser.new_context(
        viewport=viewport or {"width": 1100, "height": 800}, locale="en-US"
    )
    context.set_default_timeout(10_000)
    page = await context.new_page()
    site.fake.oauth_login_as(who)
    await page.goto(site.url + "/")
    await page.get_by_role("link", name="Log in with Discord").click()
    await page.wait_for_url(site.url + "/")
    assert await page.locator("html").get_attribute("lang") == "de"
    return context, page


async def body_text(page: Any) -> str:
    return str(await page.locator("body").inner_text())


async def context_page(browser: Any, locale: str) -> Any:
    """A new browser context whose ``Accept-Language`` is ``locale``, and a page in it."""
    context = await browser.new_context(viewport={"width": 1100, "height": 700}, locale=locale)
    context.set_default_timeout(5000)
    return context, await context.new_page()


async def test_the_dashboard_in_german_from_the_browser_then_french_from_the_picker(
    browser: Any, site: Site
) -> None:
    world = site.world
    await site.crier.bot.announcements.create(
        news_draft(site, "Standup in 5 Minuten!", NOW + timedelta(hours=2))
    )
    context, page = await context_page(browser, "de-DE")
    try:
        await page.goto(site.url + "/")
        assert await page.locator("html").get_attribute("lang") == "de"
        assert await page.locator("h1").inner_text() == "Geplante Ankündigungen"
        site.fake.oauth_login_as(world.admin)  # alice's Discord is in English (en-US)...
        await page.get_by_role("link", name="Mit Discord anmelden").click()
        await page.wait_for_url(site.url + "/")
        # ...which the login remembers: it comes before the browser's language.
        assert await page.locator("h1").inner_text() == "Your servers"
        await page.get_by_label("Language").select_option("de")
        await page.get_by_role("button", name="Change language").click()
        await page.wait_for_url(site.url + "/")
        assert await page.locator("h1").inner_text() == "Deine Server"
        assert await page.get_by_role("button", name="Abmelden").is_visible()

        await page.get_by_role("link", name=world.guild.name).click()
        assert await page.get_by_role("link", name="Neue Ankündigung").is_visible()
        headers = await page.locator("table.list th").all_inner_texts()
        assert headers == ["#", "Status", "Kanal", "Nächstes Mal", "Wiederholung", "Text"]
        row = await page.locator("table.list tbody tr").first.inner_text()
        assert "geplant" in row
        assert "einmal" in row
        options = await page.get_by_label("Anzeigen").locator("option").all_inner_texts()
        assert options == ["Alle", "Anstehend", "Wiederkehrend", "Pausiert",
                           "Fehlgeschlagen", "Gepostet"]  # fmt: skip
        await document_screenshot(page, "dashboard-de.png")

        # An announcement's page and the form, in German too.
        await page.goto(f"{site.url}/g/{world.guild.id}/a/1")
        assert await page.locator("h1").inner_text() == "Ankündigung #1 geplant"
        assert await page.get_by_role("button", name="Pausieren").is_visible()
        await page.goto(f"{site.url}/g/{world.guild.id}/new")
        assert await page.locator("h1").inner_text() == "Neue Ankündigung"
        assert await page.get_by_label("Nachricht", exact=True).is_visible()
        assert await page.get_by_role("button", name="Planen").is_visible()

        # The picker: French, on the page it was picked on.
        here = page.url
        await page.get_by_label("Sprache").select_option("fr")
        await page.get_by_role("button", name="Sprache wechseln").click()
        await page.wait_for_url(here)
        assert await page.locator("h1").inner_text() == "Nouvelle annonce"
        assert await page.get_by_role("button", name="Programmer").is_visible()
        assert await page.locator("html").get_attribute("lang") == "fr"
    finally:
        await context.close()


async def test_the_viewers_discord_language_is_the_dashboards(browser: Any, site: Site) -> None:
    world = site.world
    world.member.user.locale = "pt-BR"  # bob's Discord is in Brazilian Portuguese
    context, page = await context_page(browser, "en-US")
    try:
        site.fake.oauth_login_as(world.member)
        await page.goto(site.url + "/")
        assert await page.locator("h1").inner_text() == "Scheduled announcements"
        await page.get_by_role("link", name="Log in with Discord").click()
        await page.wait_for_url(site.url + "/")
        assert await page.locator("h1").inner_text() == "Seus servidores"
        assert await page.get_by_role("button", name="Sair").is_visible()
    finally:
        await context.close()


GERMAN_WEEKDAY = re.compile(r"^Fr\. 2030-03-01 \d\d:\d\d UTC$")
"""A time the dashboard writes, in German: NOW is a Friday (Babel's ``Fr.``)."""


async def test_the_list_and_an_announcement_write_times_in_german(browser: Any, site: Site) -> None:
    world = site.world
    await site.crier.bot.announcements.create(news_draft(site, "Standup", NOW + timedelta(hours=2)))
    context, page = await german_viewer(browser, site, world.admin.user)
    try:
        await page.goto(f"{site.url}/g/{world.guild.id}")
        shown = await page.locator("table.list time").first.inner_text()
        assert GERMAN_WEEKDAY.match(shown), shown
        assert leftovers(await body_text(page), [*CHROME, "Fri", "once", "scheduled"]) == []
        await page.goto(f"{site.url}/g/{world.guild.id}/a/1")
        relative = await page.locator(".relative").first.inner_text()
        assert relative == "in 2 Stunden"
        assert leftovers(await body_text(page), [*CHROME, "Fri", "in 2 hours"]) == []
    finally:
        await context.close()


TEMPLATES_ENGLISH = [
    *CHROME, "Templates", "of at most", "Use one with", "Channel", "Title", "Delete",
    "No templates yet.", "Save an announcement as a template", "Announcement number",
    "Save template", "Saved announcement", "Deleted the template", "keep it", "undone",
]  # fmt: skip
"""The templates page's English (not ``Name``: German's too)."""


async def test_the_templates_page_in_german_then_french_from_the_picker(
    browser: Any, site: Site
) -> None:
    world = site.world
    await site.crier.bot.announcements.create(
        news_draft(site, "Wochentreffen {date}", NOW + timedelta(hours=1))
    )
    context, page = await german_viewer(browser, site, world.admin.user)
    try:
        await page.goto(f"{site.url}/g/{world.guild.id}")
        await page.get_by_role("link", name="Vorlagen").click()
        assert await page.title() == f"Vorlagen · {world.guild.name} · crier"
        assert await page.locator(".empty").inner_text() == "Noch keine Vorlagen."
        await page.get_by_label("Name").fill("woche")
        await page.get_by_label("Nummer der Ankündigung").fill("1")
        await page.get_by_role("button", name="Vorlage speichern").click()
        flash = await page.locator(".flash").inner_text()
        assert flash.startswith("💾 Ankündigung #1 als Vorlage woche gespeichert"), flash
        headers = await page.locator("table.list th").all_inner_texts()
        assert headers == ["Name", "Kanal", "Titel", "Text", "Aktionen"]  # read out, not shown
        intro = await page.locator("main > p").nth(1).inner_text()
        assert intro == "1 von höchstens 100. Verwende eine mit /planen vorlage:name.", intro
        text = await body_text(page)
        assert leftovers(text, TEMPLATES_ENGLISH) == []
        await document_screenshot(page, "dashboard-de-templates.png")

        await page.get_by_role("button", name="woche löschen").click()
        assert await page.locator("h1").inner_text() == "Vorlage woche löschen?"
        assert leftovers(await body_text(page), TEMPLATES_ENGLISH) == []  # the confirmation
        await page.get_by_role("button", name="Vorlage woche löschen").click()
        assert await page.locator(".flash").inner_text() == "🗑️ Vorlage woche gelöscht."
        assert await page.locator(".empty").inner_text() == "Noch keine Vorlagen."
        assert leftovers(await body_text(page), TEMPLATES_ENGLISH[:-3]) == []

        # The picker: French, on this page.
        here = page.url
        await page.get_by_label("Sprache").select_option("fr")
        await page.get_by_role("button", name="Sprache wechseln").click()
        await page.wait_for_url(here)
        assert await page.locator("html").get_attribute("lang") == "fr"
        assert await page.locator("h1").inner_text() == "Modèles"
        assert await page.locator(".empty").inner_text() == "Aucun modèle pour l'instant."
        assert await page.get_by_role("button", name="Enregistrer le modèle").is_visible()
    finally:
        await context.close()


FORM_ENGLISH = [
    *CHROME, "New announcement", "Start from a template", "Fill the form from it", "When",
    "Repeat", "Time zone", "Until", "Message", "Title", "Image or file", "Mention",
    "Discord event", "Create a Discord event for each occurrence", "Event location",
    "Event length", "Event in voice or stage", "Save as template", "Template name",
    "Schedule", "Preview", "nobody", "once",
]  # fmt: skip
"""The new-announcement form's English, the event and template controls included."""


async def test_the_new_announcement_form_in_german_with_its_event_and_template_controls(
    browser: Any, site: Site
) -> None:
    world = site.world
    await site.crier.bot.announcements.save_template(
        Template(world.guild.id, "woche", "Wochentreffen {date}")
    )
    context, page = await german_viewer(browser, site, world.admin.user)
    try:
        await page.goto(f"{site.url}/g/{world.guild.id}/new")
        assert await page.locator("h1").inner_text() == "Neue Ankündigung"
        await page.get_by_label("Mit einer Vorlage beginnen").select_option("woche")
        await page.get_by_role("button", name="Formular damit ausfüllen").click()
        message = page.get_by_role("textbox", name="Nachricht")
        assert await message.input_value() == "Wochentreffen {date}"
        tick = page.get_by_label("Für jeden Termin ein Discord-Event erstellen")
        await tick.check()
        # Each tick box sits on the line of its words (one line of text high, not two).
        for label in await page.locator("form.announcement label.check").all():
            lines = await label.evaluate(
                "e => e.getBoundingClientRect().height / parseFloat(getComputedStyle(e).lineHeight)"
            )
            assert lines < 1.5, (await label.inner_text(), lines)
        assert await page.get_by_label("Ort des Events").is_visible()
        # The hints are examples a German reader can type, the date one still ahead.
        hint = await page.locator("#f-when-hint").inner_text()
        assert f"in 90 Minuten, morgen 9 Uhr, {example_date(NOW.date())}." in hint, hint
        hint = await page.locator("#f-repeat-hint").inner_text()
        assert "jeden Freitag um 20 Uhr, täglich, alle 2 Stunden, cron." in hint, hint
        assert leftovers(await body_text(page), FORM_ENGLISH) == []
        await document_screenshot(page, "dashboard-de-form.png")
    finally:
        await context.close()


IMPORT_ENGLISH = [
    *CHROME, "Import", "Dry run", "Export file", "Upload (dry run)", "Import all",
    "Nothing is imported until you confirm", "Choose the",
]  # fmt: skip


async def test_the_import_and_its_dry_run_in_german(
    browser: Any, site: Site, tmp_path: Path
) -> None:
    world = site.world
    service = site.crier.bot.announcements
    await service.create(news_draft(site, "Exportiert", NOW + timedelta(hours=2)))
    context, page = await german_viewer(browser, site, world.admin.user)
    try:
        exported = await page.request.get(f"{site.url}/g/{world.guild.id}/export")
        path = tmp_path / "export.json"
        path.write_bytes(await exported.body())
        assert [a["text"] for a in json.loads(path.read_text())["announcements"]] == ["Exportiert"]
        await service.cancel(world.guild.id, 1)

        await page.goto(f"{site.url}/g/{world.guild.id}")
        await page.get_by_role("link", name="Importieren", exact=True).click()
        assert await page.title() == f"Importieren · {world.guild.name} · crier"
        await page.get_by_role("button", name="Hochladen (Probelauf)").click()  # no file
        answer = await page.locator(".answer").inner_text()
        assert (
            answer
            == "Wähle die .json-Datei aus, die ein Export erstellt hat, und lade sie dann hoch."
        )
        assert leftovers(await body_text(page), IMPORT_ENGLISH) == []

        await page.goto(f"{site.url}/g/{world.guild.id}/import")
        await page.get_by_label("Exportdatei (.json)").set_input_files(path)
        await page.get_by_role("button", name="Hochladen (Probelauf)").click()
        report = page.get_by_role("region", name="Probelauf")
        assert await report.is_visible()
        assert await page.get_by_role("button", name="Alles importieren").is_visible()
        # The page around the report (the report is the /import answer's words).
        text = (await body_text(page)).replace(await report.inner_text(), "")
        assert "Nichts wird importiert, bevor du den Probelauf bestätigst." in text
        assert leftovers(text, IMPORT_ENGLISH) == []
    finally:
        await context.close()


OPERATOR_ENGLISH = [
    *CHROME[:3], "Schedules", "Runs", "Scheduler jobs", "any state", "Function",
    "function", "Fails", "Due", "Error", "pending", "No jobs.", "Fri", "Retry", "Cancel",
    "Fields", "Attempt", "Outcome", "canceled",
]  # fmt: skip


async def test_the_operators_pages_in_german(browser: Any, site: Site) -> None:
    world = site.world
    await site.crier.bot.announcements.create(
        news_draft(site, "Ein Job", NOW + timedelta(minutes=10))
    )
    context, page = await german_viewer(browser, site, site.fake.app_owner)
    try:
        await page.get_by_role("link", name="Jobs").click()
        assert await page.locator("h1").inner_text() == "Jobs des Schedulers"
        headers = await page.locator("table.list th").all_inner_texts()
        assert headers == ["ID", "Status", "Funktion", "Fehlschläge", "Fällig", "Name", "Fehler"]
        row = page.locator("table.list tbody tr")
        assert "wartend" in await row.inner_text()
        due = await row.locator("time").inner_text()
        assert GERMAN_WEEKDAY.match(due), due
        states = await page.get_by_label("Status").locator("option").all_inner_texts()
        assert states[:3] == ["jeder Zustand", "wartend", "zurückgehalten"]
        assert leftovers(await body_text(page), OPERATOR_ENGLISH) == []

        await row.get_by_role("link").click()
        await page.get_by_role("button", name="Abbrechen").click()
        assert leftovers(await body_text(page), OPERATOR_ENGLISH) == []  # the confirmation
        await page.get_by_role("button", name=re.compile(r"^Job \d+ abbrechen$")).click()
        flash = await page.locator(".flash").inner_text()
        assert re.fullmatch(r"Job \d+ abgebrochen\.", flash), flash
        assert await page.locator("h1 .badge").inner_text() == "abgebrochen"
        assert await page.locator(".empty").inner_text() == "Keine Läufe aufgezeichnet."
        fields = await page.locator("table.fields").inner_text()  # the job's raw fields
        text = (await body_text(page)).replace(fields, "")
        assert leftovers(text, OPERATOR_ENGLISH) == []

        await page.get_by_role("link", name="Zeitpläne").click()
        # The bot's own schedule (HISTORY_DAYS's hourly retention job) is listed.
        assert "crier:retention" in await body_text(page)
        await page.get_by_role("link", name="Limits").click()
        await page.get_by_label("Server-ID").fill(str(world.guild.id))
        await page.get_by_role("button", name="Anzeigen").click()
        assert await page.get_by_text("Leer: die Einstellung der Instanz.").is_visible()
        lines = await page.locator("ul.limits li").all_inner_texts()
        assert "announcements: 1.000 (MAX_ANNOUNCEMENTS_PER_GUILD)" in lines, lines
        assert "min-repeat-minutes: 1 Minute (MIN_REPEAT_MINUTES)" in lines, lines
        assert await page.get_by_label("min-repeat-minutes (Minuten)").is_visible()
        await page.get_by_label("announcements").fill("5000")
        await page.get_by_role("button", name="Speichern").click()
        flash = await page.locator(".flash").inner_text()
        assert flash.startswith(f"Limits von Server {world.guild.id} gesetzt: announcements: "
                                "5.000 "), flash  # fmt: skip
        lines = await page.locator("ul.limits li").all_inner_texts()
        assert "announcements: 5.000 (für diesen Server gesetzt)" in lines, lines
        english = [e for e in OPERATOR_ENGLISH if e != "Servers"]  # "Die Limits eines Servers"
        english += ["Server id", "Show", "(minutes)", "set for this server"]
        assert leftovers(await body_text(page), english) == []
    finally:
        await context.close()


ERROR_ENGLISH = [*CHROME, "Not found", "not found", "Back to your servers", "Answer"]


async def test_the_error_pages_in_german(browser: Any, site: Site) -> None:
    world = site.world
    context, page = await german_viewer(browser, site, world.admin.user)
    try:
        response = await page.goto(f"{site.url}/g/{world.guild.id}/a/99")
        assert response is not None
        assert response.status == 404
        assert await page.title() == "Fehler: Antwort · crier"
        assert await page.locator(".answer").inner_text() == "Ankündigung #99 nicht gefunden."
        assert await page.get_by_role("link", name="Zurück zu deinen Servern").is_visible()
        assert leftovers(await body_text(page), ERROR_ENGLISH) == []

        response = await page.goto(f"{site.url}/g/1234/templates")  # no such server
        assert response is not None
        assert response.status == 404
        assert await page.locator(".answer").inner_text() == "Nicht gefunden."
        assert await page.locator("html").get_attribute("lang") == "de"
        assert leftovers(await body_text(page), ERROR_ENGLISH) == []

        response = await page.goto(f"{site.url}/no/such/page")  # no route at all
        assert response is not None
        assert response.status == 404
        assert await page.locator(".answer").inner_text() == "Nicht gefunden."
        assert await page.get_by_role("button", name="Abmelden").is_visible()
        assert leftovers(await body_text(page), ERROR_ENGLISH) == []

        refused = await page.request.post(f"{site.url}/timezone", form={"csrf": "stale"})
        assert refused.status == 403
        html = await refused.text()
        assert "Dieses Formular konnte nicht geprüft werden" in html
        assert '<html lang="de">' in html
        assert "security token" not in html
    finally:
        await context.close()


async def test_no_german_page_is_wider_than_a_phone(browser: Any, site: Site) -> None:
    world = site.world
    service = site.crier.bot.announcements
    for hours, text in ((2, "Wöchentliche Teambesprechung"), (26, "Monatsabschluss")):
        await service.create(news_draft(site, text, NOW + timedelta(hours=hours)))
    context, page = await german_viewer(browser, site, world.admin.user, viewport=PHONE)
    try:
        await page.goto(f"{site.url}/g/{world.guild.id}/templates")
        await page.get_by_label("Name").fill("besprechung")
        await page.get_by_label("Nummer der Ankündigung").fill("1")
        await page.get_by_role("button", name="Vorlage speichern").click()
        await page.wait_for_selector(".flash")
        for where in ("", "/templates", "/import", "/new?template=besprechung", "/a/1/edit"):
            await page.goto(f"{site.url}/g/{world.guild.id}{where}")
            widths = await page.evaluate(
                "[document.documentElement.scrollWidth, window.innerWidth]"
            )
            assert widths[0] <= widths[1], (where, widths)
            if where == "":
                await document_screenshot(page, "dashboard-de-narrow.png")
    finally:
        await context.close()


async def test_the_picker_goes_back_to_this_dashboards_page_only(browser: Any, site: Site) -> None:
    context, page = await context_page(browser, "en-US")
    try:
        for came_from, back in [
            (f"{site.url}/ops/limits?guild=5", "/ops/limits?guild=5"),
            (f"{site.url}//elsewhere.example/x", "/"),  # a path the not-found page answers
            (f"{site.url}/\\elsewhere.example", "/"),
            ("http://elsewhere.example/g/1", "/"),
            ("", "/"),
        ]:
            response = await page.request.get(
                f"{site.url}/language?lang=fr", headers={"Referer": came_from}, max_redirects=0
            )
            assert response.status == 303, came_from
            assert response.headers["location"] == back, came_from
    finally:
        await context.close()
