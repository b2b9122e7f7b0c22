// What every screen shares: API calls through the console's own proxy (which signs them; the
// browser never holds keys), building elements, and errors told with Kafka's name and what to do.

export async function api(path, options = {}) {
  return own(`api${path}`, options);
}

// The console's own answers (the lag it samples) and the API's, both behind its header.
export async function own(path, options = {}) {
  let answer;
  try {
    answer = await fetch(path, {
      ...options,
      headers: { "X-Tidelog-Console": "1", Accept: "application/json", ...(options.headers || {}) },
    });
  } catch (cause) {
    throw kafkaError("NETWORK_EXCEPTION", `the console did not answer (${cause.message})`);
  }
  const body = await answer.json().catch(() => ({}));
  if (!answer.ok) {
    throw kafkaError(body.error || "UNKNOWN_SERVER_ERROR", body.message || `HTTP ${answer.status}`);
  }
  return body;
}

export function kafkaError(name, message) {
  const error = new Error(message);
  error.kafka = name;
  return error;
}

export function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

const HINTS = {
  UNKNOWN_TOPIC_OR_PARTITION: "Check the name on the Topics screen, or create the topic there.",
  TOPIC_ALREADY_EXISTS: "Choose another name, or open the topic that has it.",
  INVALID_TOPIC_EXCEPTION: "A name is 1 to 249 of a-z A-Z 0-9 . _ - (not . or ..).",
  INVALID_PARTITIONS: "Give the new total, above the current count (partitions are never removed).",
  INVALID_CONFIG: "Check the config's name and value: docs/api.md lists Kafka's topic configs.",
  INVALID_REQUEST: "Check the form's fields.",
  INVALID_TIMESTAMP: "Give a time such as 2026-11-24T10:42, or milliseconds since 1970.",
  OFFSET_OUT_OF_RANGE: "Start between the log start and the high watermark.",
  NON_EMPTY_GROUP: "Stop the group's consumers first: offsets move only while it is empty.",
  GROUP_ID_NOT_FOUND: "No member ever joined it and it holds no offsets.",
  CLUSTER_AUTHORIZATION_FAILED: "Open the console at the address tidelog console printed.",
  SASL_AUTHENTICATION_FAILED: "The API refused this machine's AWS credentials: run tidelog doctor.",
  NETWORK_EXCEPTION: "Is tidelog console (or tidelog dev) still running?",
  REQUEST_TIMED_OUT: "Try again; if it lasts, run tidelog doctor.",
  KAFKA_STORAGE_ERROR: "Storage did not answer: try again; if it lasts, run tidelog doctor.",
  UNKNOWN_SERVER_ERROR: "Try again; if it lasts, the API's logs say why.",
};

export function failure(error) {
  const name = error.kafka || "UNKNOWN_SERVER_ERROR";
  const hint = HINTS[name];
  return element("p", { class: "error", role: "alert" },
    element("strong", {}, name), `: ${error.message}`, hint ? ` ${hint}` : "");
}

// At most `limit` calls of `task` in flight: a cluster of hundreds of topics or groups is read
// without hundreds of requests at once.
export async function mapLimit(items, limit, task) {
  const results = new Array(items.length);
  let next = 0;
  async function worker() {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index], index);
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

export function bytes(count) {
  if (count < 1024) return `${count} B`;
  const units = ["KiB", "MiB", "GiB", "TiB", "PiB"];
  let value = count;
  let unit = -1;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

// Every group as listed, with its committed offsets (null where they could not be read): the
// groups screen sums them per group, the topics screen per topic.
export async function groupOffsets() {
  const { groups } = await api("/v1/groups");
  return mapLimit(groups, 6, (g) => api(`/v1/groups/${encodeURIComponent(g.group)}/offsets`)
    .then((o) => ({ ...g, offsets: o.offsets }))
    .catch(() => ({ ...g, offsets: null })));
}
