// A topic's administration: add partitions, change a config, delete it behind a typed
// confirmation.

import { api, element, failure } from "./api.js";

export function adminForms(topic, partitions, reload) {
  const outcome = element("div", { "aria-live": "polite" });
  async function change(path, method, body) {
    try {
      await api(path, { method, headers: { "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body) });
      return true;
    } catch (error) {
      outcome.replaceChildren(failure(error));
      return false;
    }
  }
  const base = `/v1/topics/${encodeURIComponent(topic)}`;

  const count = element("input", { id: "add-count", type: "number", min: String(partitions + 1),
    value: String(partitions + 1) });
  const grow = element("form", { "aria-label": "Add partitions" },
    element("label", { for: "add-count" }, "Partitions in all"), count,
    element("button", { type: "submit" }, "Add partitions"));
  grow.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (await change(`${base}/partitions`, "POST", { count: Number(count.value) })) reload();
  });

  const configName = element("input", { id: "config-name", placeholder: "retention.ms" });
  const configValue = element("input", { id: "config-value", placeholder: "empty: the default" });
  const alter = element("form", { "aria-label": "Change a config" },
    element("label", { for: "config-name" }, "Config"), configName,
    element("label", { for: "config-value", class: "after" }, "New value"), configValue,
    element("button", { type: "submit" }, "Change"));
  alter.addEventListener("submit", async (event) => {
    event.preventDefault();
    const value = configValue.value === "" ? null : configValue.value;
    if (await change(`${base}/configs`, "PATCH", { configs: { [configName.value]: value } })) {
      outcome.textContent = `${configName.value} is now ${value === null ? "its default" : value}`;
    }
  });

  const typed = element("input", { id: "confirm-delete", autocomplete: "off" });
  const remove = element("button", { type: "submit", disabled: "" }, "Delete the topic");
  typed.addEventListener("input", () => { remove.disabled = typed.value !== topic; });
  const doom = element("form", { "aria-label": "Delete the topic" },
    element("label", { for: "confirm-delete" }, `Type ${topic} to delete it and all its records`),
    typed, remove);
  doom.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (typed.value === topic && await change(base, "DELETE")) location.hash = "#/topics";
  });
  return element("section", { "aria-labelledby": "admin-heading" },
    element("h3", { id: "admin-heading" }, "Administer"), grow, alter, doom, outcome);
}
