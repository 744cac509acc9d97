"""The group recipe and derived state, on hand-built histories and random arrival orders."""

import hashlib
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.protocol.group_state import EXCLUDED_IN_PAST, Exclusion, GroupEvent, derive
from tanglenode.protocol.groups import Kind, Private

ALICE, BOB, CAROL, DAVE, MALLORY = (bytes([n]) * 32 for n in range(1, 6))


class History:
    """Builds group events; each new one follows the given tips (default: all current tips)."""

    def __init__(self, creator: bytes) -> None:
        self.events: list[GroupEvent] = []
        self.root = self.add(creator, Kind.INIT, [creator], parents=(), epoch=None)

    def tips(self) -> tuple[bytes, ...]:
        referenced = {p for e in self.events for p in e.group_previous}
        return tuple(sorted(e.id for e in self.events if e.id not in referenced))

    def add(self, author, kind, members=(), *, parents=None, epoch=None, follows=(), readable=True):
        parents = self.tips() if parents is None else parents
        event_id = hashlib.sha256(repr((len(self.events), author, kind)).encode()).digest()
        private = Private(Kind(kind), tuple(members)) if readable else None
        if kind == Kind.INIT:
            epoch = event_id
        self.events.append(
            GroupEvent(
                event_id, author, tuple(parents), epoch or self.root, tuple(follows), private
            )
        )
        return event_id


def test_members_add_post_and_a_forged_add_is_left_out():
    h = History(ALICE)
    add_bob = h.add(ALICE, Kind.ADD, [BOB])
    bob_post = h.add(BOB, Kind.POST)
    forged = h.add(MALLORY, Kind.ADD, [MALLORY])
    mallory_post = h.add(MALLORY, Kind.POST)
    state = derive(h.events, h.root)
    assert {add_bob, bob_post} <= state.valid
    assert "not a member" in state.invalid[forged]
    assert mallory_post in state.invalid  # the forged add did not make it a member
    assert state.members == {ALICE, BOB} and state.current_epoch == h.root


def test_a_post_before_the_add_is_seen_is_invalid_even_if_the_add_exists():
    h = History(ALICE)
    root = h.root
    early = h.add(BOB, Kind.POST, parents=(root,))  # bob had not seen his own addition
    add_bob = h.add(ALICE, Kind.ADD, [BOB], parents=(root,))
    late = h.add(BOB, Kind.POST, parents=(add_bob,))
    state = derive(h.events, root)
    assert early in state.invalid and late in state.valid


def test_exclusion_opens_an_epoch_and_keeps_what_was_written_before():
    h = History(ALICE)
    h.add(ALICE, Kind.ADD, [BOB, CAROL])
    before = h.add(BOB, Kind.POST)
    tips_before_exclusion = h.tips()
    exclude = h.add(ALICE, Kind.EXCLUDE, [BOB])
    concurrent = h.add(BOB, Kind.POST, parents=tips_before_exclusion)  # had not seen it
    epoch1 = h.add(ALICE, Kind.INIT, [ALICE, CAROL], parents=(exclude,), follows=(h.root,))
    after = h.add(BOB, Kind.POST, parents=(exclude,))  # saw his exclusion
    carol = h.add(CAROL, Kind.POST, parents=(epoch1,), epoch=epoch1)
    bob_new_epoch = h.add(BOB, Kind.POST, parents=(epoch1,), epoch=epoch1)
    state = derive(h.events, h.root)
    assert {before, concurrent, exclude, epoch1, carol} <= state.valid
    assert after in state.invalid and bob_new_epoch in state.invalid
    assert state.invalid[after] == EXCLUDED_IN_PAST  # the rule private documents share
    assert state.exclusions == [Exclusion(exclude, h.root, frozenset({BOB}))]
    assert state.tips == [epoch1] and state.members == {ALICE, CAROL}
    assert state.epochs[h.root].current_members == {ALICE, CAROL}


def test_a_new_epoch_cannot_smuggle_in_members():
    h = History(ALICE)
    h.add(ALICE, Kind.ADD, [BOB])
    sneaky = h.add(BOB, Kind.INIT, [BOB, MALLORY], follows=(h.root,))
    state = derive(h.events, h.root)
    assert "only keep members" in state.invalid[sneaky]
    assert state.tips == [h.root]


def test_concurrent_epochs_intersect_and_the_lowest_id_is_current():
    h = History(ALICE)
    h.add(ALICE, Kind.ADD, [BOB, CAROL, DAVE])
    fork = h.tips()
    out_carol = h.add(ALICE, Kind.EXCLUDE, [CAROL], parents=fork)
    e1 = h.add(ALICE, Kind.INIT, [ALICE, BOB, DAVE], parents=(out_carol,), follows=(h.root,))
    out_dave = h.add(BOB, Kind.EXCLUDE, [DAVE], parents=fork)
    e2 = h.add(BOB, Kind.INIT, [ALICE, BOB, CAROL], parents=(out_dave,), follows=(h.root,))
    state = derive(h.events, h.root)
    assert state.tips == sorted([e1, e2]) and state.current_epoch == min(e1, e2)
    assert state.members == {ALICE, BOB}
    merge = h.add(ALICE, Kind.INIT, [ALICE, BOB], follows=(e1, e2))
    assert derive(h.events, h.root).tips == [merge]


def test_missing_previous_is_pending_and_unreadable_is_reported():
    h = History(ALICE)
    orphan = h.add(ALICE, Kind.POST, parents=(b"\x09" * 32,))
    secret = h.add(ALICE, Kind.POST, parents=(h.root,), readable=False)
    state = derive(h.events, h.root)
    assert state.pending == {orphan} and secret in state.unreadable
    assert secret in state.order and orphan not in state.order


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32))
def test_random_histories_derive_the_same_state_in_any_order(seed):
    rng = random.Random(seed)
    people = [ALICE, BOB, CAROL, DAVE, MALLORY]
    h = History(ALICE)
    epoch = h.root
    for _ in range(rng.randint(1, 30)):
        author = rng.choice(people)
        tips = h.tips()
        parents = tuple(sorted(rng.sample(tips, rng.randint(1, len(tips)))))
        kind = rng.choice([Kind.ADD, Kind.POST, Kind.POST, Kind.EXCLUDE, Kind.INIT])
        if kind == Kind.INIT:
            epoch = h.add(
                author, kind, [*rng.sample(people, 3), author], parents=parents, follows=(epoch,)
            )
        else:
            h.add(author, kind, rng.sample(people, 1), parents=parents, epoch=epoch)
    reference = derive(h.events, h.root)
    for _ in range(3):
        shuffled = list(h.events)
        rng.shuffle(shuffled)
        state = derive(shuffled, h.root)
        assert (state.order, state.valid, state.invalid, state.tips) == (
            reference.order,
            reference.valid,
            reference.invalid,
            reference.tips,
        )
        assert state.members == reference.members
