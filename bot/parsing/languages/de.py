"""German: ``morgen 9 Uhr``, ``in 2 Stunden``, ``heute Abend um 20 Uhr``, ``24.12. 18 Uhr``,
``jeden Freitag um 20 Uhr``, ``jeden ersten Montag im Monat um 9 Uhr``,
``am letzten Tag des Monats um 18 Uhr``.

The rewrites work on folded text (``ubermorgen``, ``nachsten``, ``ss`` for ``ß``) and run
in order: ``Uhr`` times before dotted dates (``20.30 Uhr`` is a time, ``24.12.`` a date),
``morgen früh`` before ``morgen``.
"""

from __future__ import annotations

from typing import Final

from . import EN_DAY, EN_DAYS, EN_MONTHS, Language, Replacement

_DAYS: Final = ("montag", "dienstag", "mittwoch", "donnerstag", "freitag", "samstag", "sonntag")
_MONTHS: Final = (
    r"januar|jan|janner",
    r"februar|feb",
    r"marz|maerz|mrz",
    r"april|apr",
    r"mai",
    r"juni|jun",
    r"juli|jul",
    r"august|aug",
    r"september|sept|sep",
    r"oktober|okt",
    r"november|nov",
    r"dezember|dez",
)
_DE_DAY: Final = "|".join(_DAYS)
_ORDINALS: Final = (
    (r"ersten|erster|erste|1\.", "first"),
    (r"zweiten|zweiter|zweite|2\.", "second"),
    (r"dritten|dritter|dritte|3\.", "third"),
    (r"vierten|vierter|vierte|4\.", "fourth"),
    (r"funften|funfter|funfte|fuenften|5\.", "fifth"),
    (r"letzten|letzter|letzte", "last"),
)

REWRITES: Final[tuple[tuple[str, Replacement], ...]] = (
    # no repeat
    (r"^(?:einmal|nie|keine|keine wiederholung|nein)$", "once"),
    # ä, ö, ü typed as ae, oe, ue in the words below
    (r"taeglich", "taglich"),
    (r"naechste[nr]?", "nachsten"),
    (r"frueh", "fruh"),
    (r"woechentlich", "wochentlich"),
    (r"(viertel)?jaehrlich", r"\1jahrlich"),
    (r"stuendlich", "stundlich"),
    (r"fuenf(ten|ter|te)?", r"funf\1"),
    # numbers in words
    *((word, str(n)) for n, word in enumerate(("zwei", "drei", "vier", "funf", "sechs"), 2)),
    # halb 9 is 8:30, viertel nach 9 is 9:15, viertel vor 9 is 8:45
    (r"halb ([0-9]{1,2})", lambda m: f"{int(m[1]) - 1}:30"),
    (r"viertel nach ([0-9]{1,2})", r"\1:15"),
    (r"viertel vor ([0-9]{1,2})", lambda m: f"{int(m[1]) - 1}:45"),
    # clock times: 9 Uhr, 9:30 Uhr, 20.30 Uhr, 9 Uhr 30, um 9
    (r"([0-9]{1,2})[:.]([0-9]{2}) ?uhr", r"\1:\2"),
    (r"([0-9]{1,2}) ?uhr ([0-9]{2})", r"\1:\2"),
    (r"([0-9]{1,2}) ?uhr", r"\1:00"),
    (r"mittags?|zu mittag", "noon"),
    (r"mitternacht", "midnight"),
    (r"um ([0-9]{1,2})(?![0-9:.])", r"at \1:00"),
    (r"um", "at"),
    # repeats that are one English word
    (r"(?:am |jeden )?letzten tag", "on the last day"),
    (r"werktags|an werktagen|wochentags|montag bis freitag|unter der woche", "weekdays"),
    (r"am wochenende|an wochenenden|wochenends|jedes wochenende", "weekends"),
    (r"taglich|jeden tag|alle tage|einmal am tag|einmal taglich", "every day"),
    (r"alle 14 tage|vierzehntagig|vierzehntaglich|jede zweite woche", "every 2 weeks"),
    (r"jeden (?:2|zweiten) tag", "every 2 days"),
    (r"wochentlich|jede woche|einmal pro woche|einmal die woche", "every week"),
    (r"vierteljahrlich|jedes quartal|quartalsweise", "quarterly"),
    (
        r"(?:am|jeden) ([0-9]{1,2})\.? (?:jedes monats|jeden monats|des monats|im monat)",
        r"on the \1 of every month",
    ),
    (r"im monat|des monats|jedes monats|jeden monats|eines monats", "of every month"),
    (r"monatlich|jeden monat|einmal im monat", "every month"),
    (r"jahrlich|jedes jahr|einmal im jahr", "every year"),
    (r"stundlich|jede stunde", "every hour"),
    (r"alle ([0-9]{1,3})", r"every \1"),
    # relative times
    (r"in einer halben stunde|in 1/2 stunde", "in half an hour"),
    (r"in (?:einer|einem) (stunde|tag|woche|minute)", r"in 1 \1"),
    (r"stunden?|std\.?", "hours"),
    (r"minuten?", "minutes"),
    (r"sekunden?", "seconds"),
    (r"tagen?|tage", "days"),
    (r"wochen?", "weeks"),
    (r"monaten?|monate", "months"),
    # parts of days and days
    (r"heute abend|heute nacht", "tonight"),
    (r"heute morgen|heute fruh|heute vormittag", "this morning"),
    (r"heute nachmittag", "this afternoon"),
    (r"heute", "today"),
    (r"ubermorgen|uebermorgen", "day after tomorrow"),
    (r"morgen fruh|morgen vormittag|morgen morgen", "tomorrow morning"),
    (r"morgen nachmittag", "tomorrow afternoon"),
    (r"morgen abend", "tomorrow evening"),
    (r"morgen nacht", "tomorrow night"),
    (r"morgen", "tomorrow"),
    # ordinals before dates (1. Montag), then dates: 24.12., 24. Dezember
    *((rf"(?:{de}) ({_DE_DAY})", rf"{en} \1") for de, en in _ORDINALS),
    (r"([0-9]{1,2})\.([0-9]{1,2})\.(?![0-9])", r"\1.\2"),
    *(
        (rf"([0-9]{{1,2}})\.? (?:{de})\.?", rf"\1 {en}")
        for de, en in zip(_MONTHS, EN_MONTHS, strict=True)
    ),
    # weekdays (freitags: on Fridays) and what is around them
    *((rf"{de}s", f"every {en}") for de, en in zip(_DAYS, EN_DAYS, strict=True)),
    *((de, en) for de, en in zip(_DAYS, EN_DAYS, strict=True)),
    (rf"und every ({EN_DAY})", r"und \1"),
    (rf"(?:nachsten|nachster|nachste|kommenden|kommender) ({EN_DAY})", r"next \1"),
    (r"jeden|jede|jedes|alle", "every"),
    (r"am(?= [0-9])", "on"),
    (rf"am ({EN_DAY})", r"on \1"),
    (r"am (first|second|third|fourth|fifth|last)", r"on the \1"),
    (r"und", "and"),
)

REFUSALS: Final = {
    "when": (
        "Ich konnte „{text}“ nicht als Zeitpunkt lesen. Versuchen Sie `morgen 9 Uhr`, "
        "`in 2 Stunden`, `heute Abend um 20 Uhr`, `Freitag 18:30` oder `24.12. 18 Uhr`."
    ),
    "repeat": (
        "Ich konnte „{text}“ nicht als Wiederholung lesen. Versuchen Sie `täglich um 9 Uhr`, "
        "`jeden Freitag um 20 Uhr`, `alle 2 Wochen am Montag um 9 Uhr`, "
        "`jeden ersten Montag im Monat um 9 Uhr` oder `am letzten Tag des Monats um 18 Uhr`."
    ),
    "needs_time": "„{text}“ braucht auch eine Uhrzeit, zum Beispiel `{example}`.",
    "repeat_needs_time": (
        "„{text}“ sagt nicht, um wie viel Uhr: fügen Sie eine Uhrzeit hinzu, zum Beispiel "
        "`{example}`."
    ),
    "gap": (
        "{time} gibt es am {day} ({zone}) nicht: die Uhren springen von {start} direkt auf "
        "{end}. Die nächste gültige Zeit ist {end}, versuchen Sie `{suggestion}`."
    ),
    "past": (
        "Dieser Zeitpunkt ist schon vorbei ({understood}). Versuchen Sie `morgen 9 Uhr` "
        "oder `in 2 Stunden`."
    ),
    "too_far": "Das ist zu weit in der Zukunft: ich plane höchstens 5 Jahre im Voraus.",
}

LANGUAGE: Final = Language(
    code="de",
    rewrites=REWRITES,
    weekdays=("Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag"),
    months=(
        "Januar",
        "Februar",
        "März",
        "April",
        "Mai",
        "Juni",
        "Juli",
        "August",
        "September",
        "Oktober",
        "November",
        "Dezember",
    ),
    refusals=REFUSALS,
    day_format="{weekday}, {day}. {month} {year}",
    date_time_format="{d:%d.%m.%Y %H:%M}",
    at_nine="9 Uhr",
    repeat_at_nine="um 9 Uhr",
)
