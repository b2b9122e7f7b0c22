"""The chaos runs' report, in the shape of a Jepsen report: for each fault, how long it was on,
what the clients did meanwhile and which anomalies were found; and a plot of throughput and
latency over time with the fault windows shaded (docs/reliability.md)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tidelog.chaos.anomaly import Anomaly
from tidelog.chaos.checker import check
from tidelog.chaos.history import Op, read_history
from tidelog.chaos.nemesis import FAULTS
from tidelog.storage.faults import FaultFile

BEGIN, END = "<!-- chaos:begin -->", "<!-- chaos:end -->"
NS = 1_000_000_000


@dataclass
class FaultRow:
    windows: int = 0
    seconds: float = 0.0
    sends: int = 0  # begun while it was on
    acknowledged: int = 0
    unknown: int = 0
    anomalies: int = 0


@dataclass
class RunSummary:
    seed: int
    seconds: float
    sends: dict[str, int]  # by outcome
    anomalies: dict[str, list[Anomaly]]
    unseen_but_present: int
    injected: int
    faults: dict[str, FaultRow] = field(default_factory=dict)
    windows: list[tuple[str, float, float]] = field(default_factory=list)  # kind, from, to (s)
    throughput: list[tuple[float, int]] = field(default_factory=list)  # second, acks
    latency: list[tuple[float, float, float]] = field(default_factory=list)  # second, p50, p99

    @property
    def valid(self) -> bool:
        return not any(self.anomalies.values())


def summarize(out: Path, seed: int) -> RunSummary:
    """One run's folder (tidelog.chaos.run) summed up."""
    ops = read_history([out / "history.jsonl"])
    result = check(ops)
    start = min(op.time for op in ops)
    windows = _windows(ops, start)
    invoked: dict[str, int] = {}
    latencies: dict[int, list[float]] = defaultdict(list)
    acks: dict[int, int] = defaultdict(int)
    outcome_of: dict[str, str] = {}
    for op in ops:
        if op.f != "send":
            continue
        value = str(op.value["value"])
        if op.type == "invoke":
            invoked[value] = op.time
            continue
        outcome_of[value] = op.type
        if op.type == "ok" and value in invoked:
            second = (op.time - start) // NS
            acks[second] += 1
            latencies[second].append((op.time - invoked[value]) / 1e6)
    summary = RunSummary(
        seed,
        (max(op.time for op in ops) - start) / NS,
        {k.split(":")[1]: v for k, v in result.counts.items() if k.startswith("send:")},
        dict(result.anomalies),
        result.unseen_but_present,
        FaultFile.injected(out / "faults.json"),
        windows=windows,
        throughput=sorted(acks.items()),
        latency=[(s, _quantile(v, 0.5), _quantile(v, 0.99)) for s, v in sorted(latencies.items())],
    )
    blamed = _anomalous_values(result.anomalies.values())
    for kind, begin, end in windows:
        row = summary.faults.setdefault(kind, FaultRow())
        row.windows += 1
        row.seconds += end - begin
        for value, at in invoked.items():
            if begin <= (at - start) / NS <= end:
                row.sends += 1
                outcome = outcome_of.get(value, "info")
                row.acknowledged += outcome == "ok"
                row.unknown += outcome == "info"
                row.anomalies += value in blamed
    return summary


def _windows(ops: Sequence[Op], start: int) -> list[tuple[str, float, float]]:
    begun: dict[str, int] = {}
    windows = []
    for op in ops:
        if op.f != "fault":
            continue
        kind = str(op.value["fault"])
        if op.type == "invoke":
            begun[kind] = op.time
        elif kind in begun:
            windows.append((kind, (begun.pop(kind) - start) / NS, (op.time - start) / NS))
    return windows


def _anomalous_values(found: Iterable[list[Anomaly]]) -> set[str]:
    values = set()
    for anomalies in found:
        for anomaly in anomalies:
            for key in ("value", "acked"):
                if key in anomaly.detail:
                    values.add(str(anomaly.detail[key]))
    return values


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def table(runs: Sequence[RunSummary]) -> str:
    """The report's tables, as Markdown."""
    lines = [
        "| seed | seconds | sends acknowledged | unknown | failed | written though unknown | "
        "storage faults injected | anomalies |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for run in runs:
        found = ", ".join(f"{k}: {len(v)}" for k, v in run.anomalies.items() if v) or "none"
        lines.append(
            f"| {run.seed} | {run.seconds:.0f} | {run.sends.get('ok', 0):,} | "
            f"{run.sends.get('info', 0):,} | {run.sends.get('fail', 0):,} | "
            f"{run.unseen_but_present:,} | {run.injected:,} | {found} |"
        )
    lines += [
        "",
        "| fault | windows | seconds on | sends begun meanwhile | acknowledged | unknown | "
        "anomalies |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    totals: dict[str, FaultRow] = {}
    for run in runs:
        for kind, row in run.faults.items():
            total = totals.setdefault(kind, FaultRow())
            for name in ("windows", "seconds", "sends", "acknowledged", "unknown", "anomalies"):
                setattr(total, name, getattr(total, name) + getattr(row, name))
    for kind in [*FAULTS, "housekeeping"]:
        row = totals.get(kind, FaultRow())
        lines.append(
            f"| {kind} | {row.windows} | {row.seconds:.0f} | {row.sends:,} | "
            f"{row.acknowledged:,} | {row.unknown:,} | {row.anomalies} |"
        )
    return "\n".join(lines)


COLOURS = {
    "kill-agent": "tab:red",
    "pause-agent": "tab:orange",
    "clock-skew": "tab:purple",
    "rebalance-kill": "tab:brown",
    "s3-faults": "tab:blue",
    "dynamodb-faults": "tab:cyan",
    "indefinite": "tab:olive",
    "slow-storage": "tab:gray",
}


def plot(runs: Sequence[RunSummary], path: Path) -> None:
    """Throughput and latency over time, a row per run, fault windows shaded."""
    import matplotlib  # noqa: PLC0415 - extra: chaos

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from matplotlib.patches import Patch  # noqa: PLC0415

    figure, axes = plt.subplots(len(runs), 1, figsize=(12, 2.6 * len(runs)), squeeze=False)
    for axis, run in zip(axes[:, 0], runs, strict=True):
        for kind, begin, end in run.windows:
            if kind in COLOURS:
                axis.axvspan(begin, end, color=COLOURS[kind], alpha=0.18, lw=0)
        axis.plot(*zip(*run.throughput, strict=True), color="black", lw=0.8, label="acks/s")
        axis.set_ylabel("acks / s")
        axis.set_title(f"seed {run.seed}", fontsize=9, loc="left")
        latency = axis.twinx()
        if run.latency:
            seconds, _, p99 = zip(*run.latency, strict=True)
            latency.plot(seconds, p99, color="tab:red", lw=0.6, label="p99 latency")
        latency.set_yscale("log")
        latency.set_ylabel("p99 ms")
    axes[-1, 0].set_xlabel("seconds into the run")
    figure.legend(
        handles=[Patch(color=c, alpha=0.3, label=k) for k, c in COLOURS.items()],
        loc="lower center",
        ncol=len(COLOURS),
        fontsize=8,
    )
    figure.tight_layout(rect=(0, 0.04, 1, 1))
    figure.savefig(path, dpi=90)
    plt.close(figure)


def write_section(doc: Path, body: str) -> None:
    """Replace what lies between the report's markers in ``doc``."""
    text = doc.read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    doc.write_text(f"{head}{BEGIN}\n{body}\n{END}{tail}")
