"""Kafka's ACLs, against Kafka's own tests (StandardAuthorizerTest, ResourcePatternFilterTest)
and, for random ACL sets, against a transliteration of Kafka's scan (StandardAuthorizerData:
ACLs sorted by type and reversed name, sections walked with the prefix jump), which reaches
each decision by another route."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidelog.acls import (
    CLUSTER_NAME,
    WILDCARD,
    Acl,
    AclFilter,
    InvalidAclError,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    authorize,
    authorize_by_type,
)

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY
Op = Operation


def acl(resource_type, name, pattern, principal, operation, permission, host=WILDCARD):
    return Acl(resource_type, name, pattern, principal, host, operation, permission)


def foo(op, permission):  # Kafka's newFooAcl
    return acl(TOPIC, "foo_", PREFIXED, "User:bob", op, permission)


def bar(op, permission):  # Kafka's newBarAcl
    return acl(GROUP, "bar", LITERAL, "User:*", op, permission)


def decide(acls, who, operation, resource_type, name, **options):
    return authorize(
        acls,
        principal=f"User:{who}",
        host="10.0.0.1",
        operation=operation,
        resource_type=resource_type,
        name=name,
        **options,
    )


# -- StandardAuthorizerTest -------------------------------------------------------------------


def test_allow_everyone_if_no_acl_found_decides_only_resources_without_acls():
    acls = [acl(TOPIC, "topic1", LITERAL, "User:Alice", Op.READ, ALLOW)]
    assert not decide(acls, "Bob", Op.READ, TOPIC, "topic1", allow_if_no_acl=True)
    assert decide(acls, "Bob", Op.READ, TOPIC, "topic2", allow_if_no_acl=True)
    assert not decide(acls, "Bob", Op.READ, TOPIC, "topic2", allow_if_no_acl=False)


def test_super_users_may_do_anything():
    acls = [acl(TOPIC, "t", LITERAL, "User:alice", Op.ALL, DENY)]
    assert decide(acls, "alice", Op.WRITE, TOPIC, "t", super_users={"User:alice"})


@pytest.mark.parametrize("op", [Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER])
def test_these_allows_imply_describe(op):
    assert decide([foo(op, ALLOW)], "bob", Op.DESCRIBE, TOPIC, "foo_bar")


def test_create_does_not_imply_describe_and_denies_imply_nothing():
    assert not decide([foo(Op.CREATE, ALLOW)], "bob", Op.DESCRIBE, TOPIC, "foo_bar")
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        both = [foo(op, DENY), foo(Op.DESCRIBE, ALLOW)]
        assert decide(both, "bob", Op.DESCRIBE, TOPIC, "foo_bar")
    assert not decide([foo(Op.DESCRIBE, DENY)], "bob", Op.DESCRIBE, TOPIC, "foo_bar")
    for op in (Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS):
        assert decide([foo(op, ALLOW)], "bob", Op.DESCRIBE_CONFIGS, TOPIC, "foo_bar")
    both = [foo(Op.ALTER_CONFIGS, DENY), foo(Op.DESCRIBE_CONFIGS, ALLOW)]
    assert decide(both, "bob", Op.DESCRIBE_CONFIGS, TOPIC, "foo_bar")
    assert not decide([foo(Op.ALTER_CONFIGS, DENY)], "bob", Op.ALTER_CONFIGS, TOPIC, "foo_bar")


def test_principals_match_by_name_or_the_wildcard():
    assert decide([foo(Op.READ, ALLOW)], "bob", Op.READ, TOPIC, "foo_bar")
    assert not decide([foo(Op.READ, ALLOW)], "alice", Op.READ, TOPIC, "foo_bar")
    assert not decide([bar(Op.READ, DENY), bar(Op.READ, ALLOW)], "alice", Op.READ, GROUP, "bar")


def test_simple_authorizations():
    acls = [foo(Op.READ, ALLOW), foo(Op.WRITE, ALLOW)]
    acls += [bar(Op.DESCRIBE_CONFIGS, ALLOW), bar(Op.ALTER_CONFIGS, ALLOW)]
    assert decide(acls, "bob", Op.READ, TOPIC, "foo_")
    assert decide(acls, "fred", Op.ALTER_CONFIGS, GROUP, "bar")


def test_deny_precedence_with_operation_all():
    acls = [
        acl(TOPIC, "foo", LITERAL, "User:alice", Op.ALL, DENY),
        acl(TOPIC, "foo", PREFIXED, "User:alice", Op.READ, ALLOW),
        acl(TOPIC, "foo", LITERAL, "User:*", Op.ALL, DENY),
        acl(TOPIC, "foo", PREFIXED, "User:*", Op.DESCRIBE, ALLOW),
    ]
    alice = [(Op.WRITE, "foo"), (Op.READ, "foo"), (Op.DESCRIBE, "foo"), (Op.READ, "foobar")]
    assert [decide(acls, "alice", o, TOPIC, n) for o, n in alice] == [False, False, False, True]
    bob = [(Op.DESCRIBE, "foo"), (Op.READ, "foo"), (Op.WRITE, "foo")]
    bob += [(Op.DESCRIBE, "foobaz"), (Op.READ, "foobaz")]
    assert [decide(acls, "bob", o, TOPIC, n) for o, n in bob] == [False, False, False, True, False]


def test_topic_acls_with_operation_all():
    acls = [
        acl(TOPIC, "foo", LITERAL, "User:*", Op.ALL, ALLOW),
        acl(TOPIC, "bar", PREFIXED, "User:alice", Op.ALL, ALLOW),
        acl(TOPIC, "baz", LITERAL, "User:bob", Op.ALL, ALLOW),
    ]
    cases = {
        "alice": [
            (Op.WRITE, "foo", True),
            (Op.DESCRIBE_CONFIGS, "bar", True),
            (Op.DESCRIBE, "baz", False),
        ],
        "bob": [(Op.WRITE, "foo", True), (Op.READ, "bar", False), (Op.DESCRIBE, "baz", True)],
        "malory": [(Op.DESCRIBE, "foo", True), (Op.WRITE, "bar", False), (Op.READ, "baz", False)],
    }
    for who, wanted in cases.items():
        assert [decide(acls, who, o, TOPIC, n) for o, n, _ in wanted] == [e for *_, e in wanted]


def test_prefix_acls():
    acls = [
        acl(TOPIC, "fooa", PREFIXED, "User:alice", Op.ALL, ALLOW),
        acl(TOPIC, "foobar", LITERAL, "User:bob", Op.ALL, ALLOW),
        acl(TOPIC, "f", PREFIXED, "User:bob", Op.ALL, ALLOW),
    ]
    bob = [(Op.WRITE, "foobarr"), (Op.READ, "goobar"), (Op.READ, "fooa")]
    assert [decide(acls, "bob", o, TOPIC, n) for o, n in bob] == [True, False, True]
    alice = [(Op.DESCRIBE, "fooa"), (Op.WRITE, "bar"), (Op.READ, "baz")]
    assert [decide(acls, "alice", o, TOPIC, n) for o, n in alice] == [True, False, False]


def test_hosts_match_by_address_or_the_wildcard():
    acls = [acl(TOPIC, "t", LITERAL, "User:bob", Op.READ, ALLOW, host="10.0.0.1")]
    assert decide(acls, "bob", Op.READ, TOPIC, "t")
    elsewhere = [acl(TOPIC, "t", LITERAL, "User:bob", Op.READ, ALLOW, host="10.0.0.2")]
    assert not decide(elsewhere, "bob", Op.READ, TOPIC, "t")


# -- ResourcePatternFilterTest -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("filter_type", "filter_name", "filter_pattern", "resource_type", "name", "pattern", "matches"),
    [
        (TOPIC, "Name", LITERAL, GROUP, "Name", LITERAL, False),
        (TOPIC, "Different", PREFIXED, TOPIC, "Name", PREFIXED, False),
        (TOPIC, "NAME", LITERAL, TOPIC, "Name", LITERAL, False),
        (TOPIC, "Name", LITERAL, TOPIC, "Name", PREFIXED, False),
        (ResourceType.ANY, "Name", PREFIXED, TOPIC, "Name", PREFIXED, True),
        (TOPIC, None, PREFIXED, TOPIC, "Name", PREFIXED, True),
        (TOPIC, None, PatternType.ANY, TOPIC, "Name", PREFIXED, True),
        (TOPIC, None, PatternType.MATCH, TOPIC, "Name", PREFIXED, True),
        (TOPIC, "Name", LITERAL, TOPIC, "Name", LITERAL, True),
        (TOPIC, "Name", PatternType.ANY, TOPIC, "Name", LITERAL, True),
        (TOPIC, "Name", PatternType.MATCH, TOPIC, "Name", LITERAL, True),
        (TOPIC, "Name-something", PatternType.MATCH, TOPIC, "Name", LITERAL, False),
        (TOPIC, "*", LITERAL, TOPIC, "*", LITERAL, True),
        (TOPIC, "Name", LITERAL, TOPIC, "*", LITERAL, False),
        (TOPIC, "*", LITERAL, TOPIC, "Name", LITERAL, False),
        (TOPIC, "Name", PatternType.ANY, TOPIC, "*", LITERAL, False),
        (TOPIC, "Name", PatternType.MATCH, TOPIC, "*", LITERAL, True),
        (TOPIC, "Name", PREFIXED, TOPIC, "Name", PREFIXED, True),
        (TOPIC, "Name", PREFIXED, TOPIC, "Name-something", PREFIXED, False),
        (TOPIC, "Name-something", PREFIXED, TOPIC, "Name", PREFIXED, False),
        (TOPIC, "Name-something", PatternType.ANY, TOPIC, "Name", PREFIXED, False),
        (TOPIC, "Name-something", PatternType.MATCH, TOPIC, "Name", PREFIXED, True),
    ],
)
def test_resource_pattern_filters_match_as_kafkas_do(
    filter_type, filter_name, filter_pattern, resource_type, name, pattern, matches
):
    found = acl(resource_type, name, pattern, "User:a", Op.READ, ALLOW)
    assert AclFilter(filter_type, filter_name, filter_pattern).matches(found) is matches


def test_entry_filters_match_exactly_or_anything():
    found = acl(TOPIC, "t", LITERAL, "User:a", Op.READ, ALLOW, host="h")
    assert AclFilter(principal="User:a", host="h", operation=Op.READ, permission=ALLOW).matches(
        found
    )
    assert not AclFilter(principal="User:b").matches(found)
    assert not AclFilter(host="other").matches(found)
    assert not AclFilter(operation=Op.WRITE).matches(found)
    assert not AclFilter(permission=DENY).matches(found)


# -- CreateAcls' checks -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (acl(ResourceType.ANY, "t", LITERAL, "User:a", Op.READ, ALLOW), "Invalid resourceType ANY"),
        (acl(TOPIC, "t", PatternType.MATCH, "User:a", Op.READ, ALLOW), "Invalid patternType MATCH"),
        (acl(TOPIC, "t", LITERAL, "User:a", Op.ANY, ALLOW), "Invalid operation ANY"),
        (acl(TOPIC, "t", LITERAL, "User:a", Op.READ, Permission.ANY), "Invalid permissionType ANY"),
        (acl(CLUSTER, "c", LITERAL, "User:a", Op.ALTER, ALLOW), "only valid name for the CLUSTER"),
        (acl(TOPIC, "", LITERAL, "User:a", Op.READ, ALLOW), "Invalid empty resource name"),
        (acl(TOPIC, "t", LITERAL, "alice", Op.READ, ALLOW), "Could not parse principal"),
    ],
)
def test_create_refuses_what_kafka_refuses(bad, reason):
    with pytest.raises(InvalidAclError, match=reason):
        bad.validate()


def test_create_accepts_the_cluster_by_its_name():
    acl(CLUSTER, CLUSTER_NAME, LITERAL, "User:a", Op.ALTER, ALLOW).validate()


# -- against Kafka's scan -----------------------------------------------------------------------


def kafkas_scan(acls, principal, host, operation, resource_type, name, allow_if_no_acl):
    """StandardAuthorizerData.findAclRule, transliterated: ACLs ordered by type, then name
    reversed; the section at the resource's own name walked with the prefix jump, then (with
    no DENY found) the literal wildcard's."""
    ordered = sorted(acls, key=_key)
    state = {"on": False, "allow": False, "deny": False}
    scan = (ordered, resource_type, name, (principal, "User:*"), host, operation, state)
    _check_section(*scan, exemplar=(name, PatternType.UNKNOWN))
    if not state["deny"]:
        _check_section(*scan, exemplar=(WILDCARD, LITERAL))
    if state["deny"]:
        return False
    return state["allow"] if state["on"] else allow_if_no_acl


class _Reversed:
    """Java's reversed String order, as a sort key."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return self.value == other.value

    def __lt__(self, other):
        return self.value > other.value

    def __hash__(self):
        return hash(self.value)


def _key(a):
    return (a.resource_type, _Reversed(a.name), a.pattern_type, a.principal, a.host, a.operation)


def _tail(ordered, resource_type, exemplar_name, exemplar_pattern):
    exemplar = (resource_type, _Reversed(exemplar_name), exemplar_pattern, "", "", Op.UNKNOWN)
    return next((i for i, a in enumerate(ordered) if not _key(a) < exemplar), len(ordered))


def _check_section(ordered, resource_type, name, principals, host, operation, state, exemplar):
    exemplar_name, exemplar_pattern = exemplar
    i = _tail(ordered, resource_type, exemplar_name, exemplar_pattern)
    while i < len(ordered):
        a = ordered[i]
        if a.resource_type != resource_type:
            break
        upto = 0
        while upto < min(len(name), len(a.name)) and name[upto] == a.name[upto]:
            upto += 1
        if upto == len(a.name):
            if a.pattern_type == LITERAL and upto != len(name):
                i += 1
                continue
        elif not (a.name == WILDCARD and a.pattern_type == LITERAL):
            exemplar_name = exemplar_name[:upto]
            i = _tail(ordered, resource_type, exemplar_name, exemplar_pattern)
            continue
        state["on"] = True
        result = _kafkas_find_result(a, principals, host, operation)
        if result is True:
            state["allow"] = True
        elif result is False:
            state["deny"] = True
            return
        i += 1


def _kafkas_find_result(a, principals, host, operation):
    if a.principal not in principals or a.host not in (WILDCARD, host):
        return None
    if a.operation != Op.ALL:
        if a.permission == ALLOW:
            if operation == Op.DESCRIBE:
                if a.operation not in (Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
                    return None
            elif operation == Op.DESCRIBE_CONFIGS:
                if a.operation not in (Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS):
                    return None
            elif operation != a.operation:
                return None
        elif operation != a.operation:
            return None
    return a.permission == ALLOW


NAMES = st.sampled_from(["", "f", "fo", "foo", "foob", "foobar", "g", "*", "foo_"])
ACLS = st.lists(
    st.builds(
        Acl,
        st.sampled_from([TOPIC, GROUP]),
        NAMES.filter(bool),
        st.sampled_from([LITERAL, PREFIXED]),
        st.sampled_from(["User:alice", "User:bob", "User:*"]),
        st.sampled_from([WILDCARD, "10.0.0.1", "10.0.0.2"]),
        st.sampled_from([Op.ALL, Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER, Op.ALTER_CONFIGS]),
        st.sampled_from([ALLOW, DENY]),
    ),
    max_size=8,
)


@settings(max_examples=400, deadline=None)
@given(
    acls=ACLS,
    who=st.sampled_from(["User:alice", "User:bob"]),
    operation=st.sampled_from([Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER, Op.DESCRIBE_CONFIGS]),
    resource_type=st.sampled_from([TOPIC, GROUP]),
    name=NAMES.filter(lambda n: n not in ("", "*")),
    allow_if_no_acl=st.booleans(),
)
def test_every_decision_is_kafkas_scans(acls, who, operation, resource_type, name, allow_if_no_acl):
    ours = authorize(
        acls,
        principal=who,
        host="10.0.0.1",
        operation=operation,
        resource_type=resource_type,
        name=name,
        allow_if_no_acl=allow_if_no_acl,
    )
    assert ours == kafkas_scan(
        acls, who, "10.0.0.1", operation, resource_type, name, allow_if_no_acl
    )


# Kafka's authorizeByResourceType (BaseAuthorizerTest): whether any resource of a type allows.
USER1, HOST1, HOST2 = "User:user1", "192.168.1.1", "192.168.1.2"


def by_type(acls, operation, resource_type, host=HOST1):
    return authorize_by_type(
        acls, principal=USER1, host=host, operation=operation, resource_type=resource_type
    )


def test_by_type_a_deny_takes_precedence():
    allow = acl(TOPIC, "sb1", LITERAL, USER1, Op.WRITE, ALLOW, HOST1)
    deny = acl(TOPIC, "sb1", LITERAL, USER1, Op.WRITE, DENY, HOST1)
    assert not by_type([], Op.WRITE, TOPIC)
    assert by_type([allow], Op.WRITE, TOPIC)
    assert not by_type([allow, deny], Op.WRITE, TOPIC)


def test_by_type_a_prefixed_deny_dominates_the_names_under_it():
    def group(name, permission):
        return acl(GROUP, name, PREFIXED, USER1, Op.READ, permission, HOST1)

    acls = [group("abcde", ALLOW)]
    assert by_type(acls, Op.READ, GROUP)
    acls.append(group("abcd", DENY))
    assert not by_type(acls, Op.READ, GROUP)
    acls.append(group("abc", ALLOW))
    assert by_type(acls, Op.READ, GROUP)
    acls.append(group("a", DENY))
    assert not by_type(acls, Op.READ, GROUP)
    acls.append(group("ab", ALLOW))
    assert not by_type(acls, Op.READ, GROUP)


def test_by_type_a_wildcard_deny_dominates_every_allow():
    allow = acl(GROUP, "hello", PREFIXED, USER1, Op.WRITE, ALLOW, HOST1)
    deny_all = acl(GROUP, WILDCARD, LITERAL, USER1, Op.WRITE, DENY, HOST1)
    assert by_type([allow], Op.WRITE, GROUP)
    assert not by_type([allow, deny_all], Op.WRITE, GROUP)
    allow_all = acl(GROUP, WILDCARD, LITERAL, USER1, Op.WRITE, ALLOW, HOST1)
    assert not by_type([allow, deny_all, allow_all], Op.WRITE, GROUP)


def test_by_type_all_operations_and_unrelated_denies():
    deny_write = acl(TOPIC, "sb1", LITERAL, USER1, Op.WRITE, DENY, HOST1)
    allow_all = acl(TOPIC, "sb1", LITERAL, USER1, Op.ALL, ALLOW, HOST1)
    assert by_type([deny_write, allow_all], Op.READ, TOPIC)
    deny_all = acl(TOPIC, "sb1", LITERAL, USER1, Op.ALL, DENY, HOST1)
    assert not by_type([deny_write, allow_all, deny_all], Op.READ, TOPIC)
    # Another user's deny, another host's deny: neither dominates this caller's allow.
    allow_h2 = acl(TOPIC, "sb2", LITERAL, USER1, Op.READ, ALLOW, HOST2)
    others = [
        acl(TOPIC, "sb2", LITERAL, "User:user2", Op.READ, DENY, HOST2),
        acl(TOPIC, "sb2", LITERAL, USER1, Op.READ, DENY, HOST1),
    ]
    assert by_type([allow_h2, *others], Op.READ, TOPIC, host=HOST2)
    assert not by_type([allow_h2, *others], Op.READ, TOPIC, host=HOST1)


def test_by_type_super_users_and_no_acls_found():
    assert authorize_by_type(
        [],
        principal=USER1,
        host=HOST1,
        operation=Op.WRITE,
        resource_type=TOPIC,
        super_users={USER1},
    )
    assert authorize_by_type(
        [],
        principal=USER1,
        host=HOST1,
        operation=Op.WRITE,
        resource_type=TOPIC,
        allow_if_no_acl=True,
    )
