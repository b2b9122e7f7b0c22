"""The access screen: the Kafka users SASL listeners log in, with their mechanisms, and the ACLs
agents with an authorizer check, read-only."""

from __future__ import annotations

import uuid

from tests.browser.conftest import api, axe_violations


def test_users_and_acls_are_listed(dev, console, page):
    name = f"viewer-{uuid.uuid4().hex[:6]}"
    api(dev, "PUT", f"/v1/users/{name}", {"password": "pencil", "mechanism": "SCRAM-SHA-256"})
    acl = {
        "resource_type": "topic",
        "resource_name": f"{name}-",
        "pattern_type": "prefixed",
        "principal": f"User:{name}",
        "operation": "read",
        "permission": "deny",
    }
    api(dev, "POST", "/v1/acls", acl)

    page.goto(f"{console}#/access")
    user = page.get_by_role("table", name="Kafka users").locator("tr", has_text=name)
    user.wait_for()
    assert user.locator("td").all_inner_texts() == [name, "SCRAM-SHA-256 (8192)"]
    row = page.get_by_role("table", name="ACLs").locator("tr", has_text=f"User:{name}")
    assert row.locator("td").all_inner_texts() == [
        f"User:{name}",
        "deny",
        "read",
        "topic",
        f"{name}-",
        "prefixed",
        "*",
    ]
    assert page.get_by_role("link", name="Access").get_attribute("aria-current") == "page"
    assert axe_violations(page) == []
