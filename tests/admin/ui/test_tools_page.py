"""The Tools page's policy forms over HTTP: CSRF, only the edited fields stored, refusals shown
as pages (never a stack trace), all through the same audited change as the admin API."""

from __future__ import annotations

from typing import Any

from tests.support.admin_ui import csrf_token, signed_in_client
from tests.support.tool_loop import LoopStack


def admin_view(stack: LoopStack, tool: str) -> dict[str, Any]:
    with stack.client(stack.admin_key) as admin:
        listed = admin.get("/v1/admin/tools").json()["data"]
    [found] = [t for t in listed if t["name"] == tool]
    policy: dict[str, Any] = found["policy"]
    return policy


def policy_changes(stack: LoopStack, tool: str) -> int:
    with stack.client(stack.admin_key) as admin:
        audit = admin.get(
            "/v1/admin/audit", params={"action": "tool.policy_changed", "tool": tool}
        ).json()
    return len(audit["data"])


def test_policy_forms_without_the_csrf_token_change_nothing(ui_stack: LoopStack) -> None:
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        token = csrf_token(client.get("/admin/tools").text)
        edit = {"roles": "user, admin", "requires_approval": "true"}
        forged = [
            client.post("/admin/tools/admin_only/policy", data=edit),
            client.post("/admin/tools/admin_only/policy", data={**edit, "csrf_token": token[::-1]}),
            client.post("/admin/tools/admin_only/policy/reset", data={}),
            client.post("/admin/tools/admin_only/enabled", data={"enabled": "false"}),
        ]
    assert [r.status_code for r in forged] == [403] * len(forged)
    assert admin_view(ui_stack, "admin_only")["roles"] == ["admin"]
    assert admin_view(ui_stack, "admin_only")["requires_approval"] is False
    assert policy_changes(ui_stack, "admin_only") == 0


def test_only_the_edited_fields_are_stored_and_audited(ui_stack: LoopStack) -> None:
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        token = csrf_token(client.get("/admin/tools").text)
        same = {"roles": "user", "requires_approval": "false", "csrf_token": token}
        unchanged = client.post("/admin/tools/get_time/policy", data=same)
        assert unchanged.headers["location"] == "/admin/tools?done=unchanged#tool-get_time"
        assert policy_changes(ui_stack, "get_time") == 0

        edited = client.post(
            "/admin/tools/get_time/policy", data={**same, "requires_approval": "true"}
        )
        assert edited.status_code == 303
        assert "Policy saved" in client.get(edited.headers["location"]).text
        policy = admin_view(ui_stack, "get_time")
        assert policy["admin_override"] == {
            "enabled": None,
            "roles": None,  # not edited: still the config file's
            "requires_approval": True,
            "approval_rules": None,
            "guardrails": None,
        }
        assert policy_changes(ui_stack, "get_time") == 1

        reset = client.post("/admin/tools/get_time/policy/reset", data={"csrf_token": token})
        assert "follows the config file again" in client.get(reset.headers["location"]).text
    assert admin_view(ui_stack, "get_time")["requires_approval"] is False


def test_refused_edits_are_shown_on_the_page(ui_stack: LoopStack) -> None:
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        token = csrf_token(client.get("/admin/tools").text)
        bad_role = client.post(
            "/admin/tools/read_email/policy",
            data={"roles": "user, Finance!", "requires_approval": "false", "csrf_token": token},
        )
        no_role = client.post(
            "/admin/tools/read_email/policy",
            data={"roles": " , ", "requires_approval": "false", "csrf_token": token},
        )
        unknown = client.post(
            "/admin/tools/no_such_tool/policy",
            data={"roles": "user", "requires_approval": "true", "csrf_token": token},
        )
        bad_value = client.post(
            "/admin/tools/read_email/policy",
            data={"roles": "user", "requires_approval": "sometimes", "csrf_token": token},
        )
    assert bad_role.status_code == 400
    assert "Roles must be lowercase words" in bad_role.text
    assert 'value="user, Finance!"' in bad_role.text  # the form comes back as typed
    assert no_role.status_code == 400
    assert unknown.status_code == 404
    assert "<code>no_such_tool</code> does not exist" in unknown.text
    assert bad_value.status_code == 400
    assert "requires_approval" in bad_value.text
    for page in (bad_role, no_role, unknown, bad_value):
        assert page.headers["content-type"].startswith("text/html")
        assert "Traceback" not in page.text
    assert admin_view(ui_stack, "read_email")["roles"] == ["user"]
    assert policy_changes(ui_stack, "read_email") == 0


def test_approval_rules_are_edited_as_lines_and_shown_in_words(ui_stack: LoopStack) -> None:
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        token = csrf_token(client.get("/admin/tools").text)
        rules = {
            "auto_approve": "amount is one of 1, 2\n",
            "approval_above": "amount > 1000",
            "approvers": "2",
            "csrf_token": token,
        }
        saved = client.post("/admin/tools/transfer_money/rules", data=rules)
        assert saved.status_code == 303
        page = client.get(saved.headers["location"]).text
        unreadable = client.post(
            "/admin/tools/transfer_money/rules", data={**rules, "approval_above": "amount 1000"}
        )
        unknown = client.post(
            "/admin/tools/transfer_money/rules", data={**rules, "auto_approve": "x is one of 1"}
        )
        reset = client.post("/admin/tools/transfer_money/policy/reset", data={"csrf_token": token})
        assert reset.status_code == 303

    assert "Approval rules saved" in page
    assert "approval when <code>amount</code> &gt; 1000" in page
    assert "auto-approved when <code>amount</code> is one of <code>1</code>, <code>2</code>" in page
    assert "2 approvers" in page
    assert ">amount is one of 1, 2</textarea>" in page  # the form shows them as written
    assert unreadable.status_code == 400
    assert "Cannot read <code>amount 1000</code>" in unreadable.text
    assert "&lt;argument&gt; &gt; &lt;number&gt;" in unreadable.text
    assert unknown.status_code == 400
    assert "has no argument <code>x</code>" in unknown.text
    assert admin_view(ui_stack, "transfer_money")["approval_rules"] is None
    assert policy_changes(ui_stack, "transfer_money") == 2  # saved, then reset


def test_other_addresses_under_admin_are_a_not_found_page(ui_stack: LoopStack) -> None:
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        missing = client.get("/admin/no-such-page")
        form_address = client.get("/admin/tools/get_time/policy")
        slash = client.get("/admin/", follow_redirects=False)
    for page in (missing, form_address):
        assert page.status_code == 404
        assert "There is no admin page at this address." in page.text
        assert "Sign out" in page.text  # the navigation is there for a signed-in reader
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert slash.headers["location"] == "/admin"


def test_guardrails_are_shown_and_set_per_tool_on_the_tools_page(ui_stack: LoopStack) -> None:
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        page = client.get("/admin/tools").text
        token = csrf_token(page)
        form = {"secrets__results": "deny", "personal_data__arguments": "", "csrf_token": token}
        saved = client.post("/admin/tools/read_email/guardrails", data=form)
        held_result = client.post(
            "/admin/tools/read_email/guardrails",
            data={"secrets__results": "hold", "csrf_token": token},
        )
        after = client.get("/admin/tools").text

    assert 'data-role="guardrail-secrets-arguments"' in page
    assert "as configured: hold (rule default)" in page
    assert saved.status_code == 303
    assert saved.headers["location"] == "/admin/tools?done=guardrails#tool-read_email"
    assert held_result.status_code == 400
    assert "hold" in held_result.text
    assert admin_view(ui_stack, "read_email")["guardrails"]["results"]["secrets"] == {
        "action": "deny",
        "rule": "admin tool policy",
    }
    assert '<option value="deny" selected>deny</option>' in after
