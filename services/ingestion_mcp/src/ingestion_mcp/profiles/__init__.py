"""The tool profiles: one folder each (its `PROFILE` record, tools and models), named in NAMES.

Adding a profile is its folder plus its name in settings.PROFILE_NAMES (docs/profiles.md), which lives below
the profiles so that the settings read it without importing them. A profile is imported only when it is
served (record.load).
"""

from ..settings import PROFILE_NAMES as NAMES

__all__ = ["NAMES"]
