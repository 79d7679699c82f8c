"""Spanish (``es-ES`` and ``es-419``): ``mañana a las 9``, ``en 2 horas``, ``esta noche a las
9``, ``24/12 18:00``, ``todos los viernes a las 20``, ``el primer lunes de cada mes a las 9``,
``el último día del mes a las 18``.

The rewrites work on folded text (``manana``, ``ultimo``, ``miercoles``) and run in order:
``pasado mañana`` and ``mañana por la mañana`` before ``mañana``, ordinals before ``segundo``
the unit, ``en 2h`` (in two hours) before ``20h`` (eight in the evening).
"""

from __future__ import annotations

from typing import Final

from . import EN_DAY, EN_DAYS, EN_MONTHS, Language, Replacement

_DAYS: Final = ("lunes", "martes", "miercoles", "jueves", "viernes", "sabados?", "domingos?")
_MONTHS: Final = (
    r"enero|ene",
    r"febrero|feb",
    r"marzo",
    r"abril|abr",
    r"mayo",
    r"junio",
    r"julio",
    r"agosto|ago",
    r"septiembre|setiembre|sept|sep",
    r"octubre|oct",
    r"noviembre|nov",
    r"diciembre|dic",
)
_ES_DAY: Final = "|".join(_DAYS)
_ORDINALS: Final = (
    (r"primer|primero|primera|1er|1o|1\.o|1a", "first"),
    (r"segundo|segunda|2o|2\.o|2a", "second"),
    (r"tercer|tercero|tercera|3er|3o|3\.o|3a", "third"),
    (r"cuarto|cuarta|4o|4\.o|4a", "fourth"),
    (r"quinto|quinta|5o|5\.o|5a", "fifth"),
    (r"ultimo|ultima", "last"),
)

REWRITES: Final[tuple[tuple[str, Replacement], ...]] = (
    # no repeat
    (r"^(?:una vez|nunca|ninguna|no|sin repeticion)$", "once"),
    # numbers in words
    *((word, str(n)) for n, word in enumerate(("dos", "tres", "cuatro", "cinco", "seis"), 2)),
    # clock times: a las 9, a las 9 y media, a las 21:30, 20h, a la 1
    (r"([0-9]{1,2}) y media", r"\1:30"),
    (r"y a las?(?= [0-9])", "y"),
    (r"([0-9]{1,2}) y cuarto", r"\1:15"),
    (r"([0-9]{1,2}) menos cuarto", lambda m: f"{int(m[1]) - 1}:45"),
    (r"a las? ([0-9]{1,2})(?![0-9:.h])", r"at \1:00"),
    (r"a las?(?= [0-9])", "at"),
    (r"(?<!\ben )(?<!\bcada )([0-9]{1,2})h([0-9]{2})?", r"\1:\2"),
    (r"([0-9]{1,2}):(?![0-9])", r"\1:00"),
    (r"([0-9]{1,2}:[0-9]{2}) (?:de la manana|de la madrugada)", r"\1am"),
    (r"([0-9]{1,2}:[0-9]{2}) (?:de la tarde|de la noche)", r"\1pm"),
    (r"al mediodia|a mediodia|mediodia", "noon"),
    (r"a medianoche|medianoche", "midnight"),
    # parts of days and days
    (r"pasado manana", "day after tomorrow"),
    (r"manana (?:por|en) la manana", "tomorrow morning"),
    (r"manana (?:por|en) la tarde", "tomorrow afternoon"),
    (r"manana (?:por|en) la noche", "tomorrow night"),
    (r"esta noche", "tonight"),
    (r"esta tarde", "this afternoon"),
    (r"esta manana", "this morning"),
    (r"hoy", "today"),
    (r"manana", "tomorrow"),
    # repeats that are one English word
    (r"(?:(?:todos )?los )?dias laborables|entre semana|de lunes a viernes", "weekdays"),
    (r"(?:los |cada |todos los )?fines de semana|(?:el|cada) fin de semana", "weekends"),
    (r"todos los dias|cada dia|diariamente|a diario|una vez al dia", "every day"),
    (r"cada quince dias|cada 15 dias|cada 2 semanas", "every 2 weeks"),
    (r"todas las semanas|cada semana|semanalmente|una vez a la semana", "every week"),
    (r"cada trimestre|trimestralmente", "quarterly"),
    (r"el ([0-9]{1,2}) (?:de cada|de todos los|del) mes", r"on the \1 of every month"),
    (r"el dia ([0-9]{1,2})", r"on day \1"),
    (r"de cada mes|de todos los meses|del mes|de mes", "of every month"),
    (r"todos los meses|cada mes|mensualmente|una vez al mes", "every month"),
    (r"todos los anos|cada ano|anualmente|una vez al ano", "every year"),
    (r"cada hora|todas las horas", "every hour"),
    (r"cada ([0-9]{1,3})", r"every \1"),
    # ordinals (before "segundo" the unit), the last day
    (r"(?:el )?(?:ultimo|ultima) dia", "on the last day"),
    *((rf"(?:{es}) ({_ES_DAY})", rf"{en} \1") for es, en in _ORDINALS),
    # relative times
    (r"(?:en|dentro de) media hora", "in half an hour"),
    (r"(?:en|dentro de) (?:una|un) (hora|dia|semana|minuto)", r"in 1 \1"),
    (r"dentro de", "in"),
    (r"en(?= [0-9])", "in"),
    (r"horas?", "hours"),
    (r"minutos?", "minutes"),
    (r"segundos?", "seconds"),
    (r"dias?", "days"),
    (r"semanas?", "weeks"),
    (r"meses|mes", "months"),
    # dates: 24 de diciembre (de 2027)
    *(
        (rf"([0-9]{{1,2}}) de (?:{es})(?: de ([0-9]{{4}}))?", rf"\1 {en} \2")
        for es, en in zip(_MONTHS, EN_MONTHS, strict=True)
    ),
    # weekdays and what is around them
    *((es, en) for es, en in zip(_DAYS, EN_DAYS, strict=True)),
    (rf"(?:el )?proximo ({EN_DAY})|(?:el )?({EN_DAY}) (?:que viene|proximo)", r"next \1\2"),
    (r"todos los|todas las|cada", "every"),
    (rf"los ({EN_DAY})", r"every \1"),
    (r"el(?= [0-9])", "on"),
    (rf"el ({EN_DAY})", r"on \1"),
    (r"el (first|second|third|fourth|fifth|last)", r"the \1"),
    (r"y", "and"),
)

REFUSALS: Final = {
    "when": (
        "No he podido leer «{text}» como una hora. Prueba `mañana a las 9`, `en 2 horas`, "
        "`esta noche a las 21:30`, `viernes a las 20` o `24/12 18:00`."
    ),
    "repeat": (
        "No he podido leer «{text}» como una repetición. Prueba `todos los días a las 9`, "
        "`todos los viernes a las 20`, `cada 2 semanas el lunes a las 9`, "
        "`el primer lunes de cada mes a las 9` o `el último día del mes a las 18`."
    ),
    "needs_time": "«{text}» necesita también una hora, por ejemplo `{example}`.",
    "repeat_needs_time": "«{text}» no dice a qué hora: añádela, por ejemplo `{example}`.",
    "gap": (
        "Las {time} no existen el {day} ({zone}): los relojes pasan de las {start} "
        "directamente a las {end}. La siguiente hora válida son las {end}: prueba "
        "`{suggestion}`."
    ),
    "past": "Esa hora ya ha pasado ({understood}). Prueba `mañana a las 9` o `en 2 horas`.",
    "too_far": "Eso es demasiado lejos: puedo programar hasta 5 años por adelantado.",
}

LANGUAGE: Final = Language(
    code="es",
    rewrites=REWRITES,
    weekdays=("lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo"),
    months=(
        "enero",
        "febrero",
        "marzo",
        "abril",
        "mayo",
        "junio",
        "julio",
        "agosto",
        "septiembre",
        "octubre",
        "noviembre",
        "diciembre",
    ),
    refusals=REFUSALS,
    day_format="{weekday} {day} de {month} de {year}",
    date_time_format="{d:%d/%m/%Y %H:%M}",
    at_nine="a las 9",
    repeat_at_nine="a las 9",
)
