"""A refusal names the field it is about (issue 37): the option's name, set by the check
closest to it, so that a form can show the refusal at its field."""

from __future__ import annotations

from typing import Any

import pytest

from bot.announcements import TemplateRefused
from bot.parsing import ConcernsField, InputError, concerning
from bot.requests.checks import Refusal


def test_the_closest_check_names_the_field() -> None:
    """``concerning`` names the field of an error that names none, keeps the one an inner
    check named, and leaves other errors alone."""
    with pytest.raises(InputError) as outer, concerning("when"):
        raise InputError("bad")
    assert outer.value.field == "when"
    with pytest.raises(Refusal) as inner, concerning("channel"), concerning("title"):
        raise Refusal("no", field="event_location")
    assert inner.value.field == "event_location"
    with pytest.raises(KeyError), concerning("when"):
        raise KeyError("not a member's error")
    refusals: list[Any] = [InputError("x"), Refusal("y"), TemplateRefused("z")]
    assert all(isinstance(e, ConcernsField) and e.field is None for e in refusals)
