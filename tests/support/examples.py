"""How many examples a property test draws: the count it names in the full lane, a quarter of it in the quick
lane, which loads the `quick` profile (`--hypothesis-profile=quick`, CONTRIBUTING.md). A test that names no
count draws the profile's (100 or 25)."""

from __future__ import annotations

from hypothesis import settings

QUICK_PROFILE = "quick"
_FULL = 100  # hypothesis's own max_examples, the full lane's

settings.register_profile(QUICK_PROFILE, max_examples=_FULL // 4)


def examples(full: int) -> int:
    """`full` scaled by the loaded profile (`settings()` inherits it; it is loaded before the tests are
    collected)."""
    return max(5, full * settings().max_examples // _FULL)
