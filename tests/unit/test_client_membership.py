"""The consumer's side of a rebalance, pure: what the group answers turned into revokes,
joins and assigns, for eager and cooperative groups alike."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tidelog.client.membership import Membership, Rebalancing, Stable, Step

P = [("t", p) for p in range(6)]


def held(*partitions):
    return frozenset(("t", p) for p in partitions)


def test_an_eager_rebalance_revokes_everything_then_assigns_afresh():
    m = Membership()
    m.joined_by_join(1)
    assert m.step(Stable(1, held(0, 1, 2))) == Step(assign=(P[0], P[1], P[2]))
    assert m.step(Stable(1, held(0, 1, 2))) == Step(), "a heartbeat with nothing new"
    assert m.step(Rebalancing(2)) == Step(revoke=(P[0], P[1], P[2]), join=2)
    assert m.joined == 1, "joined only once the caller has given them up"
    m.join(2)
    assert m.step(Rebalancing(2)) == Step(), "joined already: waiting for the others"
    assert m.step(Stable(2, held(0, 1))) == Step(assign=(P[0], P[1]))
    assert (m.held, m.joined, m.owned) == (2, 2, held(0, 1))


def test_a_cooperative_rebalance_revokes_only_what_moves():
    m = Membership()
    m.joined_by_join(1)
    m.step(Stable(1, held(0, 1, 2, 3)))
    assert m.step(Rebalancing(2, keep=held(0, 1, 2, 3), kept_from=1)) == Step(join=2)
    m.join(2)
    assert m.step(Stable(2, held(0, 1))) == Step(revoke=(P[2], P[3]), assign=())
    assert m.step(Rebalancing(3, keep=held(0, 1), kept_from=2)) == Step(join=3)
    m.join(3)
    assert m.step(Stable(3, held(0, 1, 4))) == Step(assign=(P[4],))


def test_a_member_that_missed_a_stable_generation_commits_as_it():
    """A cooperative group's second phase can start before a heartbeat hears the first one's
    assignment: the next rebalance says which generation was assigned, and what it holds."""
    m = Membership()
    m.joined_by_join(1)
    m.step(Stable(1, held(0, 1, 2, 3)))
    m.step(Rebalancing(2, keep=held(0, 1, 2, 3), kept_from=1))
    m.join(2)
    assert m.step(Rebalancing(3, keep=held(0, 1), kept_from=2)) == Step(revoke=(P[2], P[3]), join=3)
    assert m.held == 2, "the generation its revoked partitions are committed in"


def test_a_new_member_holds_no_generation_before_its_first_assignment():
    m = Membership()
    m.joined_by_join(4)
    assert m.held == -1
    assert m.step(Rebalancing(4, kept_from=3)) == Step()
    assert m.step(Stable(4, frozenset())) == Step(assign=()), "on_assign, even empty"


def test_an_answer_overtaken_by_a_later_one_is_ignored():
    m = Membership()
    m.joined_by_join(1)
    m.step(Stable(1, held(0)))
    m.step(Rebalancing(2))
    m.join(2)
    m.step(Stable(2, held(1)))
    assert m.step(Stable(1, held(0))) == Step()
    assert m.owned == held(1)


def test_losing_the_membership_gives_up_everything_without_a_revoke():
    m = Membership()
    m.joined_by_join(1)
    m.step(Stable(1, held(3, 1)))
    assert m.lose() == (P[1], P[3])
    assert (m.owned, m.held, m.joined, m.since) == (frozenset(), -1, -1, -1)


partitions = st.frozensets(st.sampled_from(P))


@st.composite
def answers(draw):
    """What a coordinator might answer one member over many generations: each generation
    announced (with what the member keeps, cooperative, or nothing, eager), then assigned;
    some announcements or assignments missed, some repeated."""
    cooperative = draw(st.booleans())
    out, generation, last, assigned = [], 1, frozenset(), 1
    for _ in range(draw(st.integers(1, 12))):
        generation += draw(st.integers(1, 2))
        keep = last if cooperative else frozenset()
        for _ in range(draw(st.integers(0, 2))):
            out.append(Rebalancing(generation, keep, assigned))
        if draw(st.booleans()):
            last, assigned = draw(partitions), generation
            out += [Stable(generation, last)] * draw(st.integers(1, 2))
    return out


@given(answers())
def test_steps_keep_the_owned_set_true_to_what_was_revoked_and_assigned(sequence):
    m = Membership()
    m.joined_by_join(1)
    owned: set = set()
    for answer in sequence:
        before = frozenset(m.owned)
        step = m.step(answer)
        revoked, assigned = set(step.revoke), set(step.assign or ())
        assert not revoked & assigned, "never revoked and assigned at once"
        assert revoked <= before, "only what it held is revoked"
        assert not assigned & before, "only what it lacked is assigned"
        owned = (owned - revoked) | assigned
        assert owned == m.owned
        if isinstance(answer, Rebalancing):
            assert m.owned <= answer.keep, "gives up all that the rebalance takes"
            if step.join is not None:
                assert step.join == answer.generation
                m.join(step.join)
        elif answer.generation >= m.held:
            assert m.owned == answer.assignment
            assert m.held == m.joined == answer.generation
        kept = answer.keep if isinstance(answer, Rebalancing) else frozenset()
        assert not revoked & kept, "what a cooperative member keeps is never revoked"


def test_a_refused_commit_learns_the_generation_the_member_is_in():
    m = Membership()
    m.joined_by_join(1)
    m.step(Stable(1, held(0, 1)))
    assert m.commit_generation(Rebalancing(2, keep=held(0, 1), kept_from=1)) == 1
    m.step(Rebalancing(2, keep=held(0, 1), kept_from=1))
    m.join(2)
    assert m.commit_generation(Stable(2, held(0))) == 2, "joined 2, which is now Stable"
    assert m.commit_generation(Rebalancing(3, kept_from=2)) == 2, "2 was assigned meanwhile"
    # Generations 3 and 4 were superseded before they were assigned: it is in 5.
    assert m.commit_generation(Rebalancing(6, kept_from=5)) == 5
    late = Membership()
    late.joined_by_join(7)
    assert late.commit_generation(Rebalancing(7, kept_from=6)) is None, "it joined after 6"
