// Consumer groups: every group with its lag; one group's state, generation, protocol, members
// and their partitions, committed offsets with lag in records and in time, its lag over time
// (sampled by the console, tidelog.console.lag), and the reset of an empty group's offsets.

import { api, element, failure, groupOffsets, own } from "./api.js";

const REFRESH_MS = Number(new URLSearchParams(location.search).get("refresh_ms")) || 5000;

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

const path = (group) => `/v1/groups/${encodeURIComponent(group)}`;

export async function groupsScreen(screen) {
  screen.replaceChildren(element("h2", {}, "Groups"),
    element("p", { role: "status", class: "muted" }, "Reading the groups…"));
  let groups;
  try {
    groups = await groupOffsets();
  } catch (error) {
    screen.replaceChildren(element("h2", {}, "Groups"), failure(error));
    return;
  }
  const lags = groups.map((g) => (g.offsets === null ? null
    : g.offsets.reduce((sum, p) => sum + p.lag, 0)));
  screen.replaceChildren(
    element("h2", {}, "Groups"),
    groups.length === 0
      ? element("p", { class: "muted", role: "status" },
        "No consumer groups yet: a consumer that joins one (group.id) or commits to one makes it.")
      : table("Consumer groups", ["Group", "State", "Members", "Lag (records)"],
        groups.map((g, i) => [
          element("a", { href: `#/groups/${encodeURIComponent(g.group)}` }, g.group),
          g.state, String(g.members), lags[i] === null ? "?" : String(lags[i])]), [2, 3]),
  );
}

export async function groupScreen(screen, group, live) {
  const summary = element("div", { role: "status" });
  const members = element("div");
  const offsets = element("div");
  const caption = element("figcaption", {}, `Total lag of ${group} over time`);
  const chart = element("figure", {}, caption);
  const reset = resetForm(group, () => refresh());
  screen.replaceChildren(element("h2", {}, group), summary, element("h3", {}, "Members"),
    members, element("h3", {}, "Offsets"), offsets, chart, reset);
  let plot = null;

  async function refresh() {
    let view;
    let committed;
    let history;
    try {
      [view, committed, history] = await Promise.all([
        api(path(group)),
        api(`${path(group)}/offsets`),
        own(`lag?group=${encodeURIComponent(group)}`),
      ]);
    } catch (error) {
      summary.replaceChildren(failure(error));
      return;
    }
    if (!live()) return;
    const total = committed.offsets.reduce((sum, p) => sum + p.lag, 0);
    if (view.state === "Dead" && committed.offsets.length === 0) {
      summary.textContent = "No such group: no member has joined it and it holds no offsets "
        + "(Kafka describes it as Dead).";
      members.replaceChildren();
      offsets.replaceChildren();
      chart.hidden = true;
      reset.hidden = true;
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
    draw(history);
  }

  function draw(history) {
    const samples = history.samples;
    chart.dataset.samples = String(samples.length);
    const every = history.interval_ms === null ? "" : `, sampled every ${history.interval_ms / 1000} s`;
    caption.textContent = `Total lag of ${group} over time${every}`
      + (history.error ? ` (the last sample failed: ${history.error})` : "")
      + (samples.length < 2 ? ": the console has not sampled it twice yet" : "");
    if (typeof uPlot === "undefined") return; // the vendored library failed to load
    const data = [samples.map(([t]) => t / 1000), samples.map(([, lag]) => lag)];
    if (plot === null) {
      plot = new uPlot({
        width: 640, height: 200,
        series: [{}, { label: "lag (records)", stroke: "#0b5cad", width: 2 }],
        axes: [{}, { label: "records" }],
      }, data, chart);
    } else {
      plot.setData(data);
    }
  }

  while (live()) {
    await refresh();
    await new Promise((done) => setTimeout(done, REFRESH_MS));
  }
}

function resetForm(group, done) {
  const to = element("select", { id: "reset-to" },
    element("option", { value: "earliest" }, "the earliest offsets"),
    element("option", { value: "latest" }, "the latest offsets"),
    element("option", { value: "timestamp" }, "the first offsets at a time"));
  const at = element("input", { id: "reset-at", placeholder: "2026-11-24T10:42" });
  const outcome = element("div", { "aria-live": "polite" });
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
      await api(`${path(group)}/offsets/reset`, {
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
