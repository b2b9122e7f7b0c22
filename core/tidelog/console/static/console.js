// The console's pages: plain modules, no build step. Every API call goes through the console's
// own same-origin proxy (/api/...), which signs it; the browser never holds keys.

const screen = document.getElementById("screen");

export async function api(path, options = {}) {
  const answer = await fetch(`api${path}`, {
    ...options,
    headers: { "X-Tidelog-Console": "1", Accept: "application/json", ...(options.headers || {}) },
  });
  const body = await answer.json().catch(() => ({}));
  if (!answer.ok) {
    const error = new Error(body.message || `HTTP ${answer.status}`);
    error.kafka = body.error || "UNKNOWN_SERVER_ERROR";
    throw error;
  }
  return body;
}

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

function failure(error) {
  return element("p", { class: "error", role: "alert" },
    `${error.kafka || "Error"}: ${error.message}`);
}

const COLUMNS = [
  { key: "name", label: "Topic" },
  { key: "partitions", label: "Partitions", number: true },
  { key: "records", label: "Records", number: true },
  { key: "retention", label: "Retention" },
  { key: "cleanup", label: "Cleanup policy" },
];

function retention(ms) {
  const value = Number(ms);
  if (value < 0) return "forever";
  if (value % 86400000 === 0) return `${value / 86400000} d`;
  if (value % 3600000 === 0) return `${value / 3600000} h`;
  return `${value} ms`;
}

async function topicRows() {
  const { topics } = await api("/v1/topics");
  return Promise.all(topics.map(async (topic) => {
    const described = await api(`/v1/topics/${encodeURIComponent(topic.name)}`);
    const records = described.partitions.reduce(
      (sum, p) => sum + p.high_watermark - p.log_start_offset, 0);
    return {
      name: topic.name,
      partitions: topic.partitions,
      records,
      retention: retention(topic.configs["retention.ms"]),
      cleanup: topic.configs["cleanup.policy"],
    };
  }));
}

async function topicsScreen() {
  let rows;
  try {
    rows = await topicRows();
  } catch (error) {
    screen.replaceChildren(element("h2", {}, "Topics"), failure(error));
    return;
  }
  const filter = element("input", { id: "filter", type: "search", placeholder: "name contains" });
  const table = element("table", { "aria-describedby": "count" });
  const count = element("p", { id: "count", class: "muted", role: "status" });
  let order = { key: "name", descending: false };

  function render() {
    const wanted = filter.value.trim().toLowerCase();
    const shown = rows
      .filter((row) => row.name.toLowerCase().includes(wanted))
      .sort((a, b) => {
        const [x, y] = [a[order.key], b[order.key]];
        const compared = typeof x === "number" ? x - y : String(x).localeCompare(String(y));
        return order.descending ? -compared : compared;
      });
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
      element("td", { class: column.number ? "number" : "" }, String(row[column.key])))));
    table.replaceChildren(element("thead", {}, head), element("tbody", {}, ...body));
    count.textContent = rows.length === 0
      ? "No topics yet: create one with `tidelog topic create NAME` or the API."
      : `${shown.length} of ${rows.length} topics`;
  }

  filter.addEventListener("input", render);
  render();
  screen.replaceChildren(
    element("h2", {}, "Topics"),
    element("label", { for: "filter" }, "Filter"), filter,
    count, table,
  );
}

const SCREENS = { "#/topics": topicsScreen };

function route() {
  const show = SCREENS[location.hash] || topicsScreen;
  show();
}

window.addEventListener("hashchange", route);
route();
