"""The fake backend pages like the service a client may rely on (issue 25 (4)), for ANY page size a correct
client may ask for: cursors advance, ``nextCursor`` is there exactly when ``hasMore`` is true, the pages together
are every row once, the last page may be partial, an empty result is one empty page that says it is the last.
So a stricter but correct client (another page size, another number of pages) is never judged on a quirk of the
fake. Generated with hypothesis (worlds, keywords, page sizes).

A fidelity test against the real service's recorded replies needs recordings of that traffic; the recordings of
``../shared/recordings`` hold the real binary against this fake, so there is nothing of the service to compare yet
(reported as not run)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fake_mcp.world import World


def _world(groups: int, members: int) -> World:
    return World({"groups": [{"cid": f"cidFIDELITY{i:010d}", "title": f"周会群{i}",
                              "members": [{"name": f"成员{j}", "openDingtalkId": f"odid-{i}-{j}"}
                                          for j in range(members)]} for i in range(groups)]})


def _pages(call: Any, limit: int, rows_of: Any) -> tuple[list[Any], int]:
    seen: list[Any] = []
    cursor: str | None = None
    for pages in range(1, 1000):
        args: dict[str, Any] = {"limit": limit, **({"cursor": cursor} if cursor is not None else {})}
        payload = call(args)
        rows, more, nxt = rows_of(payload)
        assert len(rows) <= limit
        assert (nxt is not None) == more, payload  # a cursor exactly when there is more
        seen += rows
        if not more:
            return seen, pages
        assert nxt != cursor, "the cursor did not advance"
        cursor = nxt
    raise AssertionError("pagination never ended")


@settings(max_examples=60, deadline=None)
@given(groups=st.integers(0, 25), limit=st.integers(1, 12))
def test_group_search_pages_are_every_match_once_for_any_page_size(groups: int, limit: int) -> None:
    world = _world(groups, 0)

    def rows_of(p: dict[str, Any]) -> tuple[list[Any], bool, Any]:
        return p["result"], p["hasMore"], p.get("nextCursor")

    seen, pages = _pages(lambda a: world.call("im", "search_groups", {"keyword": "周会", **a}), limit, rows_of)
    cids = [r["openConversationId"] for r in seen]
    assert sorted(cids) == sorted(f"cidFIDELITY{i:010d}" for i in range(groups)) and len(set(cids)) == len(cids)
    assert pages == max(1, -(-groups // limit))


@settings(max_examples=60, deadline=None)
@given(members=st.integers(0, 30), limit=st.integers(1, 12))
def test_member_pages_are_every_member_once_for_any_page_size(members: int, limit: int) -> None:
    world = _world(1, members)

    def rows_of(p: dict[str, Any]) -> tuple[list[Any], bool, Any]:
        r = p["result"]
        return r["members"], r["hasMore"], r.get("nextCursor")

    seen, _ = _pages(lambda a: world.call("chat", "get_group_members",
                                          {"openconversation_id": "cidFIDELITY0000000000", **a}), limit, rows_of)
    assert [m["openDingtalkId"] for m in seen] == [f"odid-0-{j}" for j in range(members)]


def test_a_cursor_past_the_end_is_an_empty_last_page() -> None:
    payload = _world(3, 0).call("im", "search_groups", {"keyword": "周会", "limit": 5, "cursor": "40"})
    assert payload["result"] == [] and payload["hasMore"] is False and "nextCursor" not in payload


def test_stable_ids_have_the_service_shape() -> None:
    """The world's group IDs look like openConversationIds (docs/wire.md: `cid` + base64-ish), as the CID-shape
    checks of a correct client expect."""
    from pytest_dws.core.outcome import looks_like_cid

    assert looks_like_cid("cidFIDELITY0000000001")
