"""Version ids order writes the same way on every replica; ids written before 0.4 are older than all."""

from __future__ import annotations

import itertools

from vector_gateway.versions import LeasePolicy, content_version, is_ordered, newer


def test_versions_minted_later_are_newer_even_within_one_millisecond() -> None:
    policy = LeasePolicy(clock=lambda: 1_700_000_000.0)
    minted = [policy.new_version() for _ in range(5)]
    assert all(is_ordered(v) for v in minted)
    assert all(newer(later, earlier) for earlier, later in itertools.pairwise(minted))
    assert not newer(minted[0], minted[-1]) and not newer(minted[0], minted[0])


def test_a_clock_going_back_does_not_reorder_versions() -> None:
    now = [1_700_000_100.0]
    policy = LeasePolicy(clock=lambda: now[0])
    first = policy.new_version()
    now[0] -= 30  # NTP stepped the clock back
    assert newer(policy.new_version(), first)


def test_pre_0_4_versions_are_older_than_any_ordered_one() -> None:
    legacy = "9f3c0a1b2c3d4e5f"  # uuid4().hex[:16], what 0.2 and 0.3 wrote
    ordered = LeasePolicy().new_version()
    assert newer(ordered, legacy) and not newer(legacy, ordered) and not newer(legacy, "0123456789abcdef")


def test_a_lease_stops_commits_a_clock_skew_before_it_ends() -> None:
    now = [1000.0]
    policy = LeasePolicy(seconds=600, skew=60, clock=lambda: now[0])
    expires = policy.expiry_ms()
    now[0] += 539
    assert policy.may_commit(expires)
    now[0] += 2  # 59 s left: another replica's clock may already be past the end
    assert not policy.may_commit(expires)


def test_a_relabel_keeps_the_version_of_its_content() -> None:
    row = {"version": "b" * 28, "metadata": {"__ingest": {"key": "k", "content_version": "a" * 28}}}
    assert content_version(row) == "a" * 28
    assert content_version({"version": "c" * 16, "metadata": {}}) == "c" * 16
