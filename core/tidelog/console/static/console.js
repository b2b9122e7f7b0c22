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
      element("td", { class: column.number ? "number" : "" }, column.key === "name"
        ? element("a", { href: `#/topics/${encodeURIComponent(row.name)}` }, row.name)
        : String(row[column.key])))));
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
  const outcome = element("p", { "aria-live": "polite" });
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

function adminForms(topic, partitions, reload) {
  const outcome = element("p", { "aria-live": "polite" });
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

// -- messages -----------------------------------------------------------------------------

const MAX_ROWS = 500; // rows on the page at most: a large topic never freezes it
const MAX_SHOWN = 2048; // characters of a key or value shown in a cell

// Kafka's murmur2 (seed 0x9747b28c), as the default partitioner hashes keys: a key search reads
// only the partition the key lives in.
export function murmur2(bytes) {
  const m = 0x5bd1e995;
  let h = (0x9747b28c ^ bytes.length) >>> 0;
  const blocks = bytes.length >> 2;
  for (let i = 0; i < blocks; i++) {
    let k = (bytes[4 * i] | (bytes[4 * i + 1] << 8) | (bytes[4 * i + 2] << 16)
      | (bytes[4 * i + 3] << 24)) >>> 0;
    k = Math.imul(k, m) >>> 0;
    k = (k ^ (k >>> 24)) >>> 0;
    k = Math.imul(k, m) >>> 0;
    h = (Math.imul(h, m) ^ k) >>> 0;
  }
  const tail = bytes.length & 3;
  const at = blocks * 4;
  if (tail === 3) h = (h ^ (bytes[at + 2] << 16)) >>> 0;
  if (tail >= 2) h = (h ^ (bytes[at + 1] << 8)) >>> 0;
  if (tail >= 1) h = Math.imul((h ^ bytes[at]) >>> 0, m) >>> 0;
  h = (h ^ (h >>> 13)) >>> 0;
  h = Math.imul(h, m) >>> 0;
  h = (h ^ (h >>> 15)) >>> 0;
  return h | 0; // signed, as Kafka's
}

export function partitionForKey(key, partitions) {
  return (murmur2(new TextEncoder().encode(key)) & 0x7fffffff) % partitions;
}

function decoded(base64) {
  if (base64 === null) return null;
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
}

function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(" ");
}

function shown(bytes, mode) {
  if (bytes === null) return element("span", { class: "muted" }, "null");
  if (mode === "hex") return element("code", {}, clip(hex(bytes)));
  let text;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return element("code", { title: "not UTF-8: shown as hex" }, clip(hex(bytes)));
  }
  if (mode === "json") {
    try {
      return element("pre", {}, clip(JSON.stringify(JSON.parse(text), null, 2)));
    } catch {
      // not JSON: the text as it is
    }
  }
  return element("span", {}, clip(text));
}

function clip(text) {
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}… (${text.length} chars)` : text;
}

async function startOffsets(topic, partitions, how, value) {
  const described = await api(`/v1/topics/${encodeURIComponent(topic)}`);
  const bounds = new Map(described.partitions.map((p) => [p.partition, p]));
  const starts = new Map();
  for (const partition of partitions) {
    const { log_start_offset: first, high_watermark: end } = bounds.get(partition);
    if (how === "newest") {
      starts.set(partition, Math.max(first, end - Number(value)));
    } else if (how === "offset") {
      starts.set(partition, Math.min(Math.max(first, Number(value)), end));
    } else {
      const at = new Date(value).getTime();
      const found = await api(`/v1/topics/${encodeURIComponent(topic)}/partitions/${partition}`
        + `/offsets?at=${at}`);
      starts.set(partition, found.offset < 0 ? end : found.offset);
    }
  }
  return { starts, ends: new Map([...bounds].map(([p, b]) => [p, b.high_watermark])) };
}

async function fetchFrom(topic, positions, waitMs = 0) {
  const answer = await api("/v1/fetch", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      partitions: [...positions].map(([partition, offset]) => ({ topic, partition, offset })),
      encoding: "base64",
      max_wait_ms: waitMs,
    }),
  });
  const records = [];
  for (const response of answer.responses) {
    if (response.error) {
      const error = new Error(response.message);
      error.kafka = response.error;
      throw error;
    }
    positions.set(response.partition, response.next_offset);
    for (const record of response.records) records.push({ partition: response.partition, ...record });
  }
  return records;
}

let following = 0; // the live tail's generation: a new read or screen ends the one before

async function messagesScreen(topic) {
  following += 1;
  let partitions;
  try {
    ({ partitions } = await api(`/v1/topics/${encodeURIComponent(topic)}`));
  } catch (error) {
    screen.replaceChildren(element("h2", {}, topic), failure(error));
    return;
  }
  const ids = partitions.map((p) => p.partition);
  const field = (label, control) => element("p", {}, element("label", { for: control.id }, label),
    control);
  const partition = element("select", { id: "partition" },
    element("option", { value: "all" }, "all"),
    ...ids.map((id) => element("option", { value: String(id) }, String(id))));
  const how = element("select", { id: "how" },
    element("option", { value: "newest" }, "the newest N"),
    element("option", { value: "offset" }, "an offset"),
    element("option", { value: "time" }, "a time"));
  const from = element("input", { id: "from", value: "20", "aria-describedby": "from-help" });
  const fromHelp = element("span", { id: "from-help", class: "muted" },
    " N, an offset, or a time such as 2026-11-24T10:42");
  const key = element("input", { id: "key", type: "search", placeholder: "exact key" });
  const mode = element("select", { id: "mode" },
    element("option", { value: "text" }, "text"),
    element("option", { value: "json" }, "JSON"),
    element("option", { value: "hex" }, "hex"));
  const follow = element("input", { id: "follow", type: "checkbox" });
  const read = element("button", { type: "submit" }, "Read");
  const form = element("form", { "aria-label": "What to read" },
    field("Partition", partition),
    element("p", {}, element("label", { for: "how" }, "Start from"), how,
      element("label", { for: "from", class: "after" }, "Value"), from, fromHelp),
    field("Key", key), field("Show as", mode),
    element("p", {}, follow, element("label", { for: "follow" }, "Follow new records")),
    read);
  const status = element("p", { role: "status", class: "muted" });
  const table = element("table", { "aria-label": `Records of ${topic}` });
  screen.replaceChildren(element("h2", {}, topic), form, status, table,
    adminForms(topic, ids.length, () => messagesScreen(topic)));

  let rows = [];
  function render() {
    const head = element("tr", {}, ...["Partition", "Offset", "Timestamp", "Key", "Value",
      "Headers", ""].map((name) => element("th", { scope: "col" }, name)));
    const body = rows.map((record) => {
      const copy = element("button", {
        type: "button",
        "aria-label": `Copy the command for partition ${record.partition} offset ${record.offset}`,
      }, "Copy command");
      copy.addEventListener("click", () => navigator.clipboard.writeText(
        `tidelog consume ${topic} -p ${record.partition} -o ${record.offset} -n 1 -f json`));
      const headers = record.headers.map((h) =>
        `${h.key}=${h.value === null ? "null" : new TextDecoder().decode(decoded(h.value))}`);
      return element("tr", {},
        element("td", { class: "number" }, String(record.partition)),
        element("td", { class: "number" }, String(record.offset)),
        element("td", {}, new Date(record.timestamp).toISOString()),
        element("td", {}, shown(decoded(record.key), mode.value === "hex" ? "hex" : "text")),
        element("td", {}, shown(decoded(record.value), mode.value)),
        element("td", {}, headers.join(", ")),
        element("td", {}, copy));
    });
    table.replaceChildren(element("thead", {}, head), element("tbody", {}, ...body));
  }

  async function submit(event) {
    event.preventDefault();
    const generation = ++following;
    const wanted = key.value;
    const chosen = wanted ? [partitionForKey(wanted, ids.length)]
      : partition.value === "all" ? ids : [Number(partition.value)];
    status.textContent = "Reading…";
    try {
      const { starts, ends } = await startOffsets(topic, chosen, how.value, from.value);
      const positions = new Map(starts);
      const limit = how.value === "newest" ? Number(from.value) : MAX_ROWS;
      let found = [];
      for (let round = 0; round < 20; round++) {
        const done = [...positions].every(([p, offset]) => offset >= ends.get(p));
        if (done || found.length >= MAX_ROWS) break;
        found = found.concat(await fetchFrom(topic, positions));
      }
      if (wanted) {
        found = found.filter((r) => r.key !== null
          && new TextDecoder().decode(decoded(r.key)) === wanted);
      }
      found.sort((a, b) => a.timestamp - b.timestamp || a.partition - b.partition
        || a.offset - b.offset);
      rows = how.value === "newest" ? found.slice(-limit) : found.slice(0, limit);
      render();
      const where = wanted ? `partition ${chosen[0]} (the key's)` : `${chosen.length} partition(s)`;
      status.textContent = rows.length
        ? `${rows.length} records from ${where}`
        : `No records there: ${where} hold nothing from that start.`;
      if (follow.checked) tail(generation, positions, wanted);
    } catch (error) {
      status.replaceChildren(failure(error));
    }
  }

  async function tail(generation, positions, wanted) {
    while (following === generation && follow.checked && location.hash.startsWith("#/topics/")) {
      let fresh;
      try {
        fresh = await fetchFrom(topic, positions, 5000);
      } catch (error) {
        status.replaceChildren(failure(error));
        return;
      }
      if (wanted) {
        fresh = fresh.filter((r) => r.key !== null
          && new TextDecoder().decode(decoded(r.key)) === wanted);
      }
      if (fresh.length && following === generation) {
        rows = rows.concat(fresh).slice(-MAX_ROWS);
        render();
        status.textContent = `${rows.length} records, following`;
      }
    }
  }

  form.addEventListener("submit", submit);
  mode.addEventListener("change", render);
  follow.addEventListener("change", () => {
    if (follow.checked) form.requestSubmit();
    else following += 1;
  });
  form.requestSubmit();
}

// -- groups -------------------------------------------------------------------------------

const SAMPLE_MS = Number(new URLSearchParams(location.search).get("sample_ms")) || 5000;
const RING = 720; // samples kept per group: an hour at the default 5 s
const lagHistory = new Map(); // group -> [[seconds], [records of lag]], for this page's life

function sample(group, lag) {
  let ring = lagHistory.get(group);
  if (!ring) lagHistory.set(group, (ring = [[], []]));
  ring[0].push(Date.now() / 1000);
  ring[1].push(lag);
  if (ring[0].length > RING) {
    ring[0].shift();
    ring[1].shift();
  }
  return ring;
}

function duration(ms) {
  if (ms <= 0) return "0 s";
  if (ms < 60000) return `${Math.round(ms / 1000)} s`;
  if (ms < 3600000) return `${Math.round(ms / 60000)} min`;
  return `${(ms / 3600000).toFixed(1)} h`;
}

function table(label, columns, rows, numbers = []) {
  return element("table", { "aria-label": label },
    element("thead", {}, element("tr", {}, ...columns.map((name, i) =>
      element("th", { scope: "col", class: numbers.includes(i) ? "number" : "" }, name)))),
    element("tbody", {}, ...rows.map((row) => element("tr", {}, ...row.map((cell, i) =>
      element("td", { class: numbers.includes(i) ? "number" : "" }, cell))))));
}

async function groupsScreen() {
  let groups;
  try {
    ({ groups } = await api("/v1/groups"));
  } catch (error) {
    screen.replaceChildren(element("h2", {}, "Groups"), failure(error));
    return;
  }
  const lags = await Promise.all(groups.map((g) =>
    api(`/v1/groups/${encodeURIComponent(g.group)}/offsets`)
      .then((o) => o.offsets.reduce((sum, p) => sum + p.lag, 0))
      .catch(() => null)));
  screen.replaceChildren(
    element("h2", {}, "Groups"),
    groups.length === 0
      ? element("p", { class: "muted", role: "status" },
        "No consumer groups yet: a consumer that joins one (group.id) makes it.")
      : table("Consumer groups", ["Group", "State", "Members", "Lag (records)"],
        groups.map((g, i) => [
          element("a", { href: `#/groups/${encodeURIComponent(g.group)}` }, g.group),
          g.state, String(g.members), lags[i] === null ? "?" : String(lags[i])]), [2, 3]),
  );
}

async function groupScreen(group) {
  const generation = ++following;
  const summary = element("p", { role: "status" });
  const members = element("div");
  const offsets = element("div");
  const chart = element("figure", {},
    element("figcaption", {}, `Total lag of ${group}, sampled every ${SAMPLE_MS / 1000} s`));
  const reset = resetForm(group, () => refresh());
  screen.replaceChildren(element("h2", {}, group), summary, element("h3", {}, "Members"),
    members, element("h3", {}, "Offsets"), offsets, chart, reset);
  let plot = null;

  async function refresh() {
    let view;
    let committed;
    try {
      [view, committed] = await Promise.all([
        api(`/v1/groups/${encodeURIComponent(group)}`),
        api(`/v1/groups/${encodeURIComponent(group)}/offsets`),
      ]);
    } catch (error) {
      summary.replaceChildren(failure(error));
      return;
    }
    const total = committed.offsets.reduce((sum, p) => sum + p.lag, 0);
    if (view.state === "Dead" && view.members.length === 0 && committed.offsets.length === 0) {
      summary.textContent = "No such group: no member has joined it and it holds no offsets "
        + "(Kafka describes it as Dead).";
      members.replaceChildren();
      offsets.replaceChildren();
      chart.hidden = true;
      return;
    }
    chart.hidden = false;
    // Kafka resets only the offsets of a group no member is in.
    reset.hidden = view.members.length > 0;
    summary.textContent = `${view.state}, generation ${view.generation_id}`
      + `${view.protocol ? `, ${view.protocol}` : ""}: total lag ${total} records`;
    members.replaceChildren(view.members.length === 0
      ? element("p", { class: "muted" }, "No members: the group is empty.")
      : table(`Members of ${group}`, ["Member", "Instance", "Partitions"],
        view.members.map((m) => [m.member_id, m.group_instance_id || "",
          m.assignment.map((a) => `${a.topic}: ${a.partitions.join(", ")}`).join("; ")])));
    offsets.replaceChildren(committed.offsets.length === 0
      ? element("p", { class: "muted" }, "Nothing committed yet.")
      : table(`Committed offsets of ${group}`,
        ["Topic", "Partition", "Committed", "High watermark", "Lag", "Lag in time"],
        committed.offsets.map((p) => [p.topic, String(p.partition), String(p.offset),
          String(p.high_watermark), String(p.lag), duration(p.lag_ms)]), [1, 2, 3, 4]));
    const ring = sample(group, total);
    chart.dataset.samples = String(ring[0].length);
    if (typeof uPlot === "undefined") return; // the vendored library failed to load
    if (plot === null) {
      plot = new uPlot({
        width: 640, height: 200,
        series: [{}, { label: "lag (records)", stroke: "#0b5cad", width: 2 }],
        axes: [{}, { label: "records" }],
      }, ring, chart);
    } else {
      plot.setData(ring);
    }
  }

  while (following === generation && location.hash === `#/groups/${encodeURIComponent(group)}`) {
    await refresh();
    await new Promise((done) => setTimeout(done, SAMPLE_MS));
  }
}

function resetForm(group, done) {
  const to = element("select", { id: "reset-to" },
    element("option", { value: "earliest" }, "the earliest offsets"),
    element("option", { value: "latest" }, "the latest offsets"),
    element("option", { value: "timestamp" }, "the first offsets at a time"));
  const at = element("input", { id: "reset-at", placeholder: "2026-11-24T10:42" });
  const outcome = element("p", { "aria-live": "polite" });
  const form = element("form", { "aria-label": "Reset the group's offsets", hidden: "" },
    element("h3", {}, "Reset offsets"),
    element("p", { class: "muted" }, "The group is empty: its committed offsets may be moved."),
    element("p", {}, element("label", { for: "reset-to" }, "Move them to"), to,
      element("label", { for: "reset-at", class: "after" }, "Time"), at),
    element("button", { type: "submit" }, "Reset"), outcome);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { to: to.value };
    if (to.value === "timestamp") body.timestamp = new Date(at.value).getTime();
    try {
      await api(`/v1/groups/${encodeURIComponent(group)}/offsets/reset`, {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      outcome.textContent = "Reset.";
      done();
    } catch (error) {
      outcome.replaceChildren(failure(error));
    }
  });
  return form;
}

const SCREENS = [
  [/^#\/topics\/(.+)$/, (match) => messagesScreen(decodeURIComponent(match[1]))],
  [/^#\/groups\/(.+)$/, (match) => groupScreen(decodeURIComponent(match[1]))],
  [/^#\/groups$/, () => groupsScreen()],
  [/^(#\/topics)?$/, () => topicsScreen()],
];

function route() {
  following += 1;
  const section = location.hash.startsWith("#/groups") ? "#/groups" : "#/topics";
  for (const link of document.querySelectorAll("nav a")) {
    if (link.getAttribute("href") === section) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  for (const [pattern, show] of SCREENS) {
    const match = location.hash.match(pattern);
    if (match) return show(match);
  }
  return topicsScreen();
}

window.addEventListener("hashchange", route);
route();
