// Who may do what at the Kafka port: the users SASL listeners log in (their SCRAM mechanisms)
// and the ACLs agents with an authorizer check (docs/security.md). Read-only: `tidelog user`
// and `tidelog acl` change them.

import { api, element, failure } from "./api.js";

function table(label, columns, rows) {
  return element("table", { "aria-label": label },
    element("thead", {}, element("tr", {}, ...columns.map((name) =>
      element("th", { scope: "col" }, name)))),
    element("tbody", {}, ...rows.map((row) => element("tr", {}, ...row.map((cell) =>
      element("td", {}, cell))))));
}

function empty(text) {
  return element("p", { class: "muted", role: "status" }, text);
}

export async function accessScreen(screen) {
  screen.replaceChildren(element("h2", {}, "Access"),
    element("p", { role: "status", class: "muted" }, "Reading users and ACLs…"));
  let users;
  let acls;
  try {
    [users, acls] = await Promise.all([api("/v1/users"), api("/v1/acls")]);
  } catch (error) {
    screen.replaceChildren(element("h2", {}, "Access"), failure(error));
    return;
  }
  screen.replaceChildren(
    element("h2", {}, "Access"),
    element("h3", {}, "Users"),
    users.users.length === 0
      ? empty("No Kafka users yet: tidelog user set NAME makes one.")
      : table("Kafka users", ["User", "SCRAM mechanisms (iterations)"],
        users.users.map((u) => [u.name,
          u.credentials.map((c) => `${c.mechanism} (${c.iterations})`).join(", ")])),
    element("h3", {}, "ACLs"),
    acls.acls.length === 0
      ? empty("No ACLs: on an agent with --authorizer acls, only super users may do anything.")
      : table("ACLs", ["Principal", "Permission", "Operation", "Resource", "Name", "Pattern",
        "Host"],
      acls.acls.map((a) => [a.principal, a.permission, a.operation, a.resource_type,
        a.resource_name, a.pattern_type, a.host])),
  );
}
