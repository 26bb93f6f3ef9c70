"""A watch acts with its owner's rights as they are now (issue 48, point 9), not as they were when it was set.

With an access policy (OAuth mode), setting a watch keeps what the policy read from its owner's token (scopes and
groups: `FolderRecord.owner_claims`), and each later request of the same owner refreshes them (a new token with
other groups: `AppState.note_caller`). Before every sync, and every second while it watches, the watcher asks the
policy as it is now (access/policy.py `LivePolicy`: the file is read again when it changes) whether the owner may
still write to the collection. When not, the watch pauses with that reason on its record (`error` in
get_collections) and resumes, with a catch-up sync, once the right is back. Read access to the folder is the
allowed roots' (a folder that leaves them pauses its watch: watch.py `folder_problem`).
Without a policy every caller has every right, and a watch's rights never change.
"""

from __future__ import annotations

from ..access.policy import LivePolicy
from .folders import FolderRecord


class RightsProblem(Exception):
    """The watch's owner may no longer write to its collection: shown on the record until the right is back."""


def rights_problem(policy: LivePolicy | None, record: FolderRecord) -> str | None:
    """Why the watch's owner may not sync it now (None: they may). A watch set before its owner's claims were kept
    (or without a policy) is judged as it was when set."""
    if policy is None or record.owner_claims is None:
        return None
    caller = policy.current().caller({**record.owner_claims, "sub": record.owner})
    if caller.can("write", record.collection):
        return None
    return (
        f"the watch's owner ({record.owner or 'unnamed'}) no longer has the 'write' right on collection "
        f"'{record.collection}' (the access policy or the owner's token changed); it is paused and resumes by itself "
        "when the right is back; its documents are kept"
    )
