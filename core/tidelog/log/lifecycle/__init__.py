"""Housekeeping: the jobs that keep a partition's log in shape behind the write path.

Roll merges runs of flush objects into segments (``segments/...`` objects); retention
advances ``head``'s log start and drops index items; compaction rewrites segments keeping
each key's last record; collection deletes objects nothing points at once the grace period
has passed (``gc`` queue, ``orphans``). Only the partitions marked ``due#`` are visited.

Every index change is conditional on what the job read, so a job can race produce, fetch and
another run of itself. Never: assign offsets, or delete an object before its grace period.
"""

AT_ONCE = 16  # S3 calls a job keeps out at once, within the client's 32 connections (tidelog.aws)
