// A topic's messages: from the newest N, an offset or a time, in one partition or all; searched
// by key (reading only the key's partition, as Kafka's partitioner placed it), by value or by
// header; shown as text, JSON, hex or base64; paged, and followed live on the long poll.

import { adminForms } from "./admin.js";
import { api, element, failure, kafkaError } from "./api.js";
import { partitionForKey } from "./murmur2.js";

const MAX_ROWS = 500; // rows on the page at most: a large topic never freezes it
const MAX_SHOWN = 2048; // characters of a key or value shown in a cell
const PAGE_BYTES = 1 << 20; // a fetch's answer at most
const MAX_FETCHES = 20; // fetches a page reads at most, matches or not

function decoded(base64) {
  if (base64 === null) return null;
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
}

const text = (bytes) => new TextDecoder().decode(bytes);

function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(" ");
}

function clip(shown) {
  return shown.length > MAX_SHOWN ? `${shown.slice(0, MAX_SHOWN)}… (${shown.length} chars)` : shown;
}

// A key or value as the reader asked: text (hex where it is no UTF-8), JSON, hex or base64.
function shown(base64, mode) {
  if (base64 === null) return element("span", { class: "muted" }, "null");
  if (mode === "base64") return element("code", {}, clip(base64));
  const bytes = decoded(base64);
  if (mode === "hex") return element("code", {}, clip(hex(bytes)));
  let utf8;
  try {
    utf8 = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return element("code", { title: "not UTF-8: shown as hex" }, clip(hex(bytes)));
  }
  if (mode === "json") {
    try {
      return element("pre", {}, clip(JSON.stringify(JSON.parse(utf8), null, 2)));
    } catch {
      // not JSON: the text as it is
    }
  }
  return element("span", {}, clip(utf8));
}

function headerText(h) {
  return `${h.key}=${h.value === null ? "null" : text(decoded(h.value))}`;
}

// What the start field says, checked: a clear error, not a request the API refuses.
function parseStart(how, value) {
  const raw = value.trim();
  if (how === "time") {
    const at = /^\d+$/.test(raw) ? Number(raw) : new Date(raw).getTime();
    if (!Number.isFinite(at) || at < 0) {
      throw kafkaError("INVALID_TIMESTAMP", `"${raw}" is not a time`);
    }
    return at;
  }
  const number = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (how === "newest" && !(number >= 1 && number <= MAX_ROWS)) {
    throw kafkaError("INVALID_REQUEST", `N is a whole number from 1 to ${MAX_ROWS}`);
  }
  if (how === "offset" && !Number.isSafeInteger(number)) {
    throw kafkaError("INVALID_REQUEST", "an offset is a whole number, 0 or more");
  }
  return number;
}

async function startOffsets(topic, partitions, how, start) {
  const described = await api(`/v1/topics/${encodeURIComponent(topic)}`);
  const bounds = new Map(described.partitions.map((p) => [p.partition, p]));
  const starts = new Map();
  for (const partition of partitions) {
    // The console reads read_committed (the API's default): its end is the last stable offset.
    const { log_start_offset: first, last_stable_offset: end } = bounds.get(partition);
    if (how === "newest") {
      starts.set(partition, Math.max(first, end - start));
    } else if (how === "offset") {
      starts.set(partition, Math.min(Math.max(first, start), end));
    } else {
      const found = await api(`/v1/topics/${encodeURIComponent(topic)}/partitions/${partition}`
        + `/offsets?at=${start}`);
      starts.set(partition, found.offset < 0 ? end : found.offset);
    }
  }
  return { starts, ends: new Map([...bounds].map(([p, b]) => [p, b.last_stable_offset])) };
}

// Each partition's bounds: where its log starts, where read_committed reads stop (the first
// offset of its earliest open transaction), its end, and its open transactions.
function offsetsTable(topic, partitions) {
  const head = element("tr", {}, ...["Partition", "Log start", "Last stable", "High watermark",
    "Open transactions"].map((name) => element("th", { scope: "col" }, name)));
  const rows = partitions.map((p) => element("tr", {},
    ...[p.partition, p.log_start_offset, p.last_stable_offset, p.high_watermark,
      p.open_transactions].map((value) => element("td", { class: "number" }, String(value)))));
  return element("table", { "aria-label": `Partitions of ${topic}` },
    element("thead", {}, head), element("tbody", {}, ...rows));
}

// One fetch from every position, at most PAGE_BYTES; the positions move past what came.
async function fetchFrom(topic, positions, waitMs = 0) {
  const answer = await api("/v1/fetch", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      partitions: [...positions].map(([partition, offset]) => ({ topic, partition, offset })),
      encoding: "base64",
      max_wait_ms: waitMs,
      max_bytes: PAGE_BYTES,
    }),
  });
  const records = [];
  for (const response of answer.responses) {
    if (response.error) throw kafkaError(response.error, response.message);
    positions.set(response.partition, response.next_offset);
    for (const record of response.records) records.push({ partition: response.partition, ...record });
  }
  return records;
}

// The searches, all that are filled in: a record must match each.
function matcher(key, value, header) {
  return (record) => (!key || (record.key !== null && text(decoded(record.key)) === key))
    && (!value || (record.value !== null && text(decoded(record.value)).includes(value)))
    && (!header || record.headers.some((h) => headerText(h).includes(header)));
}

const byTime = (a, b) => a.timestamp - b.timestamp || a.partition - b.partition
  || a.offset - b.offset;

export function messagesScreen(screen, topic, live) {
  return new MessagesScreen(screen, topic, live).open();
}

class MessagesScreen {
  constructor(screen, topic, live) {
    this.screen = screen;
    this.topic = topic;
    this.live = live; // is this screen still the one shown?
    this.rows = [];
    this.reading = 0; // the read under way: a new one, or leaving, ends the one before
  }

  async open() {
    let partitions;
    try {
      ({ partitions } = await api(`/v1/topics/${encodeURIComponent(this.topic)}`));
    } catch (error) {
      this.screen.replaceChildren(element("h2", {}, this.topic), failure(error));
      return;
    }
    this.ids = partitions.map((p) => p.partition);
    this.build();
    this.screen.append(offsetsTable(this.topic, partitions),
      adminForms(this.topic, this.ids.length, () => this.open()));
    this.form.requestSubmit();
  }

  build() {
    const field = (label, control, ...more) => element("p", {},
      element("label", { for: control.id }, label), control, ...more);
    const select = (id, options) => element("select", { id },
      ...options.map(([value, label]) => element("option", { value }, label)));
    this.partition = select("partition",
      [["all", "all"], ...this.ids.map((id) => [String(id), String(id)])]);
    this.how = select("how", [["newest", "the newest N"], ["offset", "an offset"],
      ["time", "a time"]]);
    this.from = element("input", { id: "from", value: "20", "aria-describedby": "from-help" });
    this.key = element("input", { id: "key", type: "search", placeholder: "exact key",
      "aria-describedby": "key-help" });
    this.value = element("input", { id: "value", type: "search", placeholder: "text in the value" });
    this.header = element("input", { id: "header", type: "search", placeholder: "name=value" });
    this.mode = select("mode", [["text", "text"], ["json", "JSON"], ["hex", "hex"],
      ["base64", "base64"]]);
    this.follow = element("input", { id: "follow", type: "checkbox" });
    this.next = element("button", { type: "button", hidden: "" }, "Next page");
    this.form = element("form", { "aria-label": "What to read" },
      field("Partition", this.partition),
      element("p", {}, element("label", { for: "how" }, "Start from"), this.how,
        element("label", { for: "from", class: "after" }, "Value"), this.from,
        element("span", { id: "from-help", class: "muted" },
          ` N up to ${MAX_ROWS}, an offset, or a time such as 2026-11-24T10:42`)),
      field("Key", this.key, element("span", { id: "key-help", class: "muted" },
        " reads only the partition Kafka's partitioner puts the key in")),
      field("Value contains", this.value),
      field("Header contains", this.header),
      field("Show as", this.mode),
      element("p", {}, this.follow, element("label", { for: "follow" }, "Follow new records")),
      element("button", { type: "submit" }, "Read"));
    this.status = element("div", { role: "status", class: "muted" });
    this.table = element("table", { "aria-label": `Records of ${this.topic}` });
    this.screen.replaceChildren(element("h2", {}, this.topic), this.form, this.status,
      this.table, this.next);

    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.read(false);
    });
    this.next.addEventListener("click", () => this.read(true));
    this.mode.addEventListener("change", () => this.render());
    this.follow.addEventListener("change", () => {
      if (this.follow.checked) this.form.requestSubmit();
      else this.reading += 1;
    });
  }

  render() {
    const head = element("tr", {}, ...["Partition", "Offset", "Timestamp", "Key", "Value",
      "Headers", ""].map((name) => element("th", { scope: "col" }, name)));
    const mode = this.mode.value;
    const body = this.rows.map((record) => {
      const copy = element("button", {
        type: "button",
        "aria-label": `Copy the command for partition ${record.partition} offset ${record.offset}`,
      }, "Copy command");
      copy.addEventListener("click", () => navigator.clipboard.writeText(
        `tidelog consume ${this.topic} -p ${record.partition} -o ${record.offset} -n 1 -f json`));
      return element("tr", {},
        element("td", { class: "number" }, String(record.partition)),
        element("td", { class: "number" }, String(record.offset)),
        element("td", {}, new Date(record.timestamp).toISOString()),
        element("td", {}, shown(record.key, mode === "json" ? "text" : mode)),
        element("td", {}, shown(record.value, mode)),
        element("td", {}, record.headers.map(headerText).join(", ")),
        element("td", {}, copy));
    });
    this.table.replaceChildren(element("thead", {}, head), element("tbody", {}, ...body));
  }

  // A page of records: from the form's start, or (`more`) from where the last page stopped.
  async read(more) {
    const reading = ++this.reading;
    const key = this.key.value;
    const chosen = key ? [partitionForKey(key, this.ids.length)]
      : this.partition.value === "all" ? this.ids : [Number(this.partition.value)];
    const where = key ? `partition ${chosen[0]} (the key's)` : `${chosen.length} partition(s)`;
    const matches = matcher(key, this.value.value, this.header.value);
    this.status.textContent = "Reading…";
    this.next.hidden = true;
    try {
      const how = this.how.value;
      if (!more) {
        const start = parseStart(how, this.from.value);
        ({ starts: this.positions, ends: this.ends } = await startOffsets(
          this.topic, chosen, how, start));
        this.newest = how === "newest" ? start : null;
      }
      const positions = this.positions;
      let found = [];
      let scanned = 0;
      for (let fetches = 0; fetches < MAX_FETCHES; fetches++) {
        const done = [...positions].every(([p, offset]) => offset >= this.ends.get(p));
        // The newest N read on to the end; a page from a start, until it is full.
        if (done || (this.newest === null && found.length >= MAX_ROWS)) break;
        const records = await fetchFrom(this.topic, positions);
        scanned += records.length;
        found = found.concat(records.filter(matches));
      }
      if (reading !== this.reading || !this.live()) return;
      found.sort(byTime);
      if (this.newest !== null) {
        this.rows = found.slice(-this.newest);
      } else {
        this.rows = found.slice(0, MAX_ROWS);
        // The next page starts at the first match not shown: nothing is skipped.
        for (const r of found.slice(MAX_ROWS)) {
          positions.set(r.partition, Math.min(positions.get(r.partition), r.offset));
        }
      }
      this.render();
      const left = [...positions].some(([p, offset]) => offset < this.ends.get(p));
      this.next.hidden = !left || this.newest !== null;
      const searched = scanned === found.length ? "" : ` (${scanned} read to find them)`;
      this.status.textContent = this.rows.length
        ? `${this.rows.length} records from ${where}${searched}`
          + (left && this.newest === null ? "; more after these: Next page" : "")
        : `No records there: ${where} hold nothing that matches from that start`
          + (left ? ` in the ${scanned} read; Next page reads on.` : ".");
      if (this.follow.checked) this.tail(reading, positions, matches);
    } catch (error) {
      if (reading === this.reading) this.status.replaceChildren(failure(error));
    }
  }

  // New records as they come, on the API's long poll; the page keeps the newest MAX_ROWS.
  async tail(reading, positions, matches) {
    while (reading === this.reading && this.follow.checked && this.live()) {
      let fresh;
      try {
        fresh = (await fetchFrom(this.topic, positions, 5000)).filter(matches);
      } catch (error) {
        this.status.replaceChildren(failure(error));
        return;
      }
      if (fresh.length && reading === this.reading && this.live()) {
        this.rows = this.rows.concat(fresh).slice(-MAX_ROWS);
        this.render();
        this.status.textContent = `${this.rows.length} records, following`;
      }
    }
  }
}
