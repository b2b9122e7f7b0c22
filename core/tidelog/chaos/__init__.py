"""Proof under faults: real Kafka clients and the HTTP client against several agents, while a
nemesis kills, pauses and skews agents and fails the stores; every operation recorded, and the
whole history checked afterwards for what Jepsen looks for (docs/reliability.md).

- ``history``: the operations, one JSON line each.
- ``checker``: the anomalies (pure).
- ``nemesis``: the faults, scheduled from a seed (pure).
- ``workers``: the clients, one process each.
- ``run``: a whole run, and ``report``: the runs' table and plot.
"""
