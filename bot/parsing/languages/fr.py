"""French: ``demain 9h``, ``dans 2 heures``, ``ce soir 21h30``, ``24/12 18h``,
``tous les vendredis à 20h``, ``le premier lundi du mois à 9h``, ``le dernier jour du mois``.

The rewrites work on folded text (no accents: ``apres-demain``, ``a 20h``) and run in order:
longer phrases before the words in them, relative times before clock times (``dans 2h`` is
in two hours, ``2h`` alone is two o'clock).
"""

from __future__ import annotations

from typing import Final

from . import EN_DAY, EN_DAYS, EN_MONTHS, Language, Replacement

_DAYS: Final = ("lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche")
_MONTHS: Final = (
    "janvier",
    "fevrier",
    "mars",
    "avril",
    "mai",
    "juin",
    "juillet",
    "aout",
    "septembre",
    "octobre",
    "novembre",
    "decembre",
)
_MONTH_SHORT: Final = {"janv": 1, "fevr": 2, "fev": 2, "avr": 4, "juil": 7, "sept": 9, "oct": 10}
_MONTH_SHORT.update({"nov": 11, "dec": 12})
_N: Final = r"[0-9]{1,3}|deux|trois|quatre|cinq|six"
_UNIT: Final = r"secondes?|minutes?|mins?|mn|heures?|h|jours?|semaines?|mois"

REWRITES: Final[tuple[tuple[str, Replacement], ...]] = (
    # no repeat
    (r"^(?:une fois|jamais|aucune?|pas de repetition|non)$", "once"),
    # numbers in words
    *((word, str(n)) for n, word in enumerate(("deux", "trois", "quatre", "cinq", "six"), 2)),
    # repeats that are one English word
    (r"tous les jours ouvres|les jours ouvres|en semaine|du lundi au vendredi", "weekdays"),
    (r"(?:tous )?les week-?ends?|le week-?end|chaque week-?end", "weekends"),
    (r"tous les jours|chaque jour|quotidiennement|une fois par jour", "every day"),
    (r"tous les quinze jours|une semaine sur 2|toutes les 2 semaines", "every 2 weeks"),
    (r"toutes les semaines|chaque semaine|une fois par semaine|hebdomadaire", "every week"),
    (r"tous les trimestres|chaque trimestre|trimestriellement", "quarterly"),
    (
        r"(?:le|tous les) ([0-9]{1,2})(?:er)? (?:de chaque|de tous les|du) mois",
        r"the \1 of every month",
    ),
    (r"du mois|de chaque mois|de tous les mois", "of every month"),
    (r"tous les mois|chaque mois|mensuellement|une fois par mois", "every month"),
    (r"tous les ans|chaque annee|chaque an|annuellement|une fois par an", "every year"),
    (r"toutes les heures|chaque heure", "every hour"),
    (rf"(?:tous|toutes) les ({_N})", r"every \1"),
    (r"et a(?= [0-9])", "et"),
    # relative times
    (r"(?:le )?dernier jour", "the last day"),
    (r"dans une demi-?heure|dans une demi heure", "in half an hour"),
    (r"dans ([0-9]{1,3}) ?h ?([0-9]{2})", r"in \1h\2m"),
    (r"dans (?:un|une) (heure|jour|semaine|minute)", r"in 1 \1"),
    (r"dans", "in"),
    (r"(?<!\bin )(?<!\bevery )([0-9]{1,2}) heures?(?: ([0-9]{2}))?", r"\1:\2"),
    (r"heures?", "hours"),
    (r"minutes?|mn", "minutes"),
    (r"secondes?", "seconds"),
    (r"jours?", "days"),
    (r"semaines?", "weeks"),
    (r"mois", "months"),
    # clock times: 9h, 21h30, 9 h 30, à 9
    (r"([0-9]{1,2}) ?h ?([0-9]{2})", r"\1:\2"),
    (r"(?<!\bin )(?<!\bevery )([0-9]{1,2}) ?h", r"\1:00"),
    (r"([0-9]{1,2}):(?![0-9])", r"\1:00"),
    (r"a ([0-9]{1,2})(?![0-9:/.])", r"at \1:00"),
    (r"a", "at"),
    # parts of days and days
    (r"aujourd' ?hui|aujourdhui", "today"),
    (r"apres-demain|apres demain", "day after tomorrow"),
    (r"demain matin", "tomorrow morning"),
    (r"demain apres-midi|demain apres midi|demain aprem", "tomorrow afternoon"),
    (r"demain soir", "tomorrow evening"),
    (r"demain", "tomorrow"),
    (r"ce soir|cette nuit", "tonight"),
    (r"ce matin", "this morning"),
    (r"cet apres-midi|cet apres midi|cet aprem", "this afternoon"),
    (r"midi", "noon"),
    (r"minuit", "midnight"),
    # weekdays (plural in repeats: tous les vendredis) and months
    *((rf"{fr}s?", en) for fr, en in zip(_DAYS, EN_DAYS, strict=True)),
    (rf"({EN_DAY}) prochain|prochain ({EN_DAY})", r"next \1\2"),
    (rf"({EN_DAY}) et ({EN_DAY})", r"\1 and \2"),
    (r"tous les|toutes les|chaque", "every"),
    (rf"les ({EN_DAY})", r"every \1"),
    (rf"1er(?= (?:{EN_DAY}))", "first"),
    (r"([0-9]{1,2})er", r"\1"),
    *((fr, en) for fr, en in zip(_MONTHS, EN_MONTHS, strict=True)),
    *((rf"{short}\.?", EN_MONTHS[n - 1]) for short, n in _MONTH_SHORT.items()),
    # ordinals (the nth weekday of the month)
    (r"premier|premiere|1ere", "first"),
    (r"deuxieme|2e|2eme|second|seconde", "second"),
    (r"troisieme|3e|3eme", "third"),
    (r"quatrieme|4e|4eme", "fourth"),
    (r"cinquieme|5e|5eme", "fifth"),
    (r"dernier|derniere", "last"),
    (r"jour", "day"),
    (r"(?:le|la) (first|second|third|fourth|fifth|last)", r"the \1"),
    (r"le(?= [0-9])", "on"),
    (rf"le ({EN_DAY})", r"on \1"),
    (r"et", "and"),
)

REFUSALS: Final = {
    "when": (
        "Je n'ai pas compris « {text} » comme une heure. Essayez `demain 9h`, "
        "`dans 2 heures`, `ce soir 21h30`, `vendredi 20h` ou `24/12 18h`."
    ),
    "repeat": (
        "Je n'ai pas compris « {text} » comme une répétition. Essayez `tous les jours à 9h`, "
        "`tous les vendredis à 20h`, `toutes les 2 semaines le lundi à 9h`, "
        "`le premier lundi du mois à 9h` ou `le dernier jour du mois à 18h`."
    ),
    "needs_time": "« {text} » a besoin d'une heure aussi, comme `{example}`.",
    "repeat_needs_time": "« {text} » ne dit pas à quelle heure : ajoutez-la, comme `{example}`.",
    "gap": (
        "{time} n'existe pas le {day} ({zone}) : les horloges passent de {start} "
        "directement à {end}. L'heure valide suivante est {end} : essayez `{suggestion}`."
    ),
    "past": "Cette heure est déjà passée ({understood}). Essayez `demain 9h` ou `dans 2 heures`.",
    "too_far": "C'est trop loin : je peux programmer jusqu'à 5 ans à l'avance.",
}

LANGUAGE: Final = Language(
    code="fr",
    rewrites=REWRITES,
    weekdays=_DAYS,
    months=(
        "janvier",
        "février",
        "mars",
        "avril",
        "mai",
        "juin",
        "juillet",
        "août",
        "septembre",
        "octobre",
        "novembre",
        "décembre",
    ),
    refusals=REFUSALS,
    day_format="{weekday} {day} {month} {year}",
    date_time_format="{d:%d/%m/%Y %H:%M}",
    at_nine="9h",
    repeat_at_nine="à 9h",
)
