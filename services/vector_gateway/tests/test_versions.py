"""Version ids carry write orders: the larger order is newer on every replica; pre-0.4 ids are older than all."""

from __future__ import annotations

import itertools

from servicekit.write_order import LocalOrder, clock_floor
from vector_gateway.versions import (
    LeasePolicy,
    content_order,
    content_status,
    content_version,
    is_ordered,
    newer,
    order_of,
    version_for,
)


def test_versions_of_larger_orders_are_newer_and_carry_their_order() -> None:
    orders = LocalOrder()
    taken = [orders.take() for _ in range(5)]
    minted = [version_for(order) for order in taken]
    assert all(is_ordered(v) for v in minted) and [order_of(v) for v in minted] == taken
    assert all(newer(later, earlier) for earlier, later in itertools.pairwise(minted))
    assert not newer(minted[0], minted[-1]) and not newer(minted[0], minted[0])
    assert version_for(taken[0]) != minted[0]  # the same order twice: two distinct versions


def test_an_order_taken_after_reading_a_stored_one_is_larger_whatever_the_clock() -> None:
    far_ahead = clock_floor() + (3_600_000 << 16)  # written by a replica whose clock runs an hour ahead
    assert LocalOrder().take(seen=far_ahead) == far_ahead + 1
    orders = LocalOrder()
    orders.observe(far_ahead)
    assert orders.take() == far_ahead + 1 and orders.take() == far_ahead + 2


def test_pre_0_4_versions_are_older_than_any_ordered_one() -> None:
    legacy = "9f3c0a1b2c3d4e5f"  # uuid4().hex[:16], what 0.2 and 0.3 wrote
    ordered = version_for(LocalOrder().take())
    assert newer(ordered, legacy) and not newer(legacy, ordered) and not newer(legacy, "0123456789abcdef")
    assert order_of(legacy) == 0


def test_versions_of_0_4_sort_below_every_order_taken_now() -> None:
    clock_version = f"{1_700_000_000_000:012x}{7:04x}{0:012x}"  # milliseconds, sequence, random (0.4-0.5)
    assert order_of(clock_version) == (1_700_000_000_000 << 16) + 7
    assert newer(version_for(LocalOrder().take()), clock_version)


def test_a_lease_stops_commits_a_clock_skew_before_it_ends() -> None:
    now = [1000.0]
    policy = LeasePolicy(seconds=600, skew=60, clock=lambda: now[0])
    expires = policy.expiry_ms()
    now[0] += 539
    assert policy.may_commit(expires)
    now[0] += 2  # 59 s left: another replica's clock may already be past the end
    assert not policy.may_commit(expires)


def test_a_relabel_keeps_the_version_and_status_of_its_content() -> None:
    content = version_for(5)
    row = {"version": version_for(9), "metadata": {"__ingest": {"key": "k", "content_version": content,
                                                                "content_status": "replaced"}}}  # fmt: skip
    assert content_version(row) == content and content_order(row) == 5 and content_status(row) == "replaced"
    legacy = {"version": "c" * 16, "metadata": {}}
    assert (content_version(legacy), content_order(legacy), content_status(legacy)) == ("c" * 16, 0, "")
