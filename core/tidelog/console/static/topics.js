// The topics screen: every topic with its partitions, records, bytes, retention, cleanup policy
// and the groups reading it with their lag; sortable and filterable. And the form that creates one.

import { api, bytes, element, failure, groupOffsets, mapLimit } from "./api.js";

const MAX_ROWS = 500; // rows drawn at most: the filter narrows a larger cluster

const COLUMNS = [
  { key: "name", label: "Topic" },
  { key: "partitions", label: "Partitions", number: true },
  { key: "records", label: "Records", number: true },
  { key: "bytes", label: "Bytes", number: true, show: (row) => bytes(row.bytes) },
  { key: "retention", label: "Retention", show: (row) => retention(row.retention) },
  { key: "cleanup", label: "Cleanup policy" },
  { key: "lag", label: "Groups (lag)", number: true, show: (row) => readers(row) },
];

function retention(ms) {
  if (ms < 0) return "forever";
  if (ms % 86400000 === 0) return `${ms / 86400000} d`;
  if (ms % 3600000 === 0) return `${ms / 3600000} h`;
  return `${ms} ms`;
}

function readers(row) {
  if (row.readers === null) return "?";
  if (row.readers.length === 0) return element("span", { class: "muted" }, "none");
  const links = row.readers.flatMap(({ group, lag }, i) => [
    i ? ", " : "",
    element("a", { href: `#/groups/${encodeURIComponent(group)}` }, group),
    ` (${lag})`,
  ]);
  return element("span", {}, ...links);
}

// The groups holding offsets in each topic, with their lag there: [{group, lag}] by topic.
async function readersByTopic() {
  const byTopic = new Map();
  for (const { group, offsets } of await groupOffsets()) {
    if (offsets === null) throw new Error(`the offsets of ${group} could not be read`);
    const lags = new Map();
    for (const p of offsets) lags.set(p.topic, (lags.get(p.topic) || 0) + p.lag);
    for (const [topic, lag] of lags) {
      if (!byTopic.has(topic)) byTopic.set(topic, []);
      byTopic.get(topic).push({ group, lag });
    }
  }
  for (const readers of byTopic.values()) readers.sort((a, b) => a.group.localeCompare(b.group));
  return byTopic;
}

async function topicRows() {
  const [{ topics }, byTopic] = await Promise.all([
    api("/v1/topics"),
    readersByTopic().catch(() => null), // the topics still show if the groups cannot
  ]);
  return mapLimit(topics, 6, async (topic) => {
    const described = await api(`/v1/topics/${encodeURIComponent(topic.name)}?sizes=true`);
    const found = byTopic === null ? null : byTopic.get(topic.name) || [];
    return {
      name: topic.name,
      partitions: topic.partitions,
      records: described.partitions.reduce(
        (sum, p) => sum + p.high_watermark - p.log_start_offset, 0),
      bytes: described.partitions.reduce((sum, p) => sum + p.size_bytes, 0),
      retention: Number(topic.configs["retention.ms"]),
      cleanup: topic.configs["cleanup.policy"],
      readers: found,
      lag: found === null ? -1 : found.reduce((sum, r) => sum + r.lag, 0),
    };
  });
}

export async function topicsScreen(screen) {
  screen.replaceChildren(element("h2", {}, "Topics"),
    element("p", { role: "status", class: "muted" }, "Reading the topics…"));
  let rows;
  try {
    rows = await topicRows();
  } catch (error) {
    screen.replaceChildren(element("h2", {}, "Topics"), failure(error), createForm());
    return;
  }
  const filter = element("input", { id: "filter", type: "search", placeholder: "name contains" });
  const table = element("table", { "aria-describedby": "count" });
  const count = element("p", { id: "count", class: "muted", role: "status" });
  let order = { key: "name", descending: false };

  function render() {
    const wanted = filter.value.trim().toLowerCase();
    const matching = rows
      .filter((row) => row.name.toLowerCase().includes(wanted))
      .sort((a, b) => {
        const [x, y] = [a[order.key], b[order.key]];
        const compared = typeof x === "number" ? x - y : String(x).localeCompare(String(y));
        return order.descending ? -compared : compared;
      });
    const shown = matching.slice(0, MAX_ROWS);
    const head = element("tr", {}, ...COLUMNS.map((column) => {
      const sorted = order.key === column.key;
      const button = element("button", { type: "button" }, column.label);
      button.dataset.key = column.key;
      button.addEventListener("click", () => {
        order = { key: column.key, descending: sorted && !order.descending };
        render();
        // The header is drawn anew: keep the keyboard on the column just sorted.
        table.querySelector(`th button[data-key="${column.key}"]`).focus();
      });
      return element("th", {
        scope: "col",
        class: column.number ? "number" : "",
        "aria-sort": sorted ? (order.descending ? "descending" : "ascending") : "none",
      }, button);
    }));
    const body = shown.map((row) => element("tr", {}, ...COLUMNS.map((column) =>
      element("td", { class: column.number ? "number" : "" }, column.key === "name"
        ? element("a", { href: `#/topics/${encodeURIComponent(row.name)}` }, row.name)
        : column.show ? column.show(row) : String(row[column.key])))));
    table.replaceChildren(element("thead", {}, head), element("tbody", {}, ...body));
    count.textContent = rows.length === 0
      ? "No topics yet: create one below, with `tidelog topic create NAME`, or with the API."
      : matching.length === 0
        ? `No topic's name contains "${filter.value.trim()}" (${rows.length} topics in all).`
        : `${matching.length} of ${rows.length} topics`
          + (shown.length < matching.length ? `, the first ${shown.length} shown: filter to narrow` : "");
  }

  filter.addEventListener("input", render);
  render();
  screen.replaceChildren(
    element("h2", {}, "Topics"),
    element("label", { for: "filter" }, "Filter"), filter,
    count, table, createForm(),
  );
}

function createForm() {
  const name = element("input", { id: "new-name", required: "", pattern: "[a-zA-Z0-9._-]{1,249}" });
  const partitions = element("input", { id: "new-partitions", type: "number", min: "1",
    value: "1" });
  const policy = element("select", { id: "new-policy" },
    element("option", { value: "delete" }, "delete"),
    element("option", { value: "compact" }, "compact"));
  const outcome = element("div", { "aria-live": "polite" });
  const form = element("form", { "aria-label": "Create a topic" },
    element("h3", {}, "Create a topic"),
    element("p", {}, element("label", { for: "new-name" }, "Name"), name),
    element("p", {}, element("label", { for: "new-partitions" }, "Partitions"), partitions),
    element("p", {}, element("label", { for: "new-policy" }, "Cleanup policy"), policy),
    element("button", { type: "submit" }, "Create"), outcome);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await api("/v1/topics", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ name: name.value, partitions: Number(partitions.value),
          configs: { "cleanup.policy": policy.value } }),
      });
      location.hash = `#/topics/${encodeURIComponent(name.value)}`;
    } catch (error) {
      outcome.replaceChildren(failure(error));
    }
  });
  return form;
}
