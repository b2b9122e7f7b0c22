"""The write path: validate, stage on local disk, PUT one flush object, commit offsets.

Owns, in DynamoDB, each partition's ``head`` (next offset), its index items ``idx#<offset>``,
its producers' states ``pid#<id>`` and ``due#`` marks (all in one transaction per commit), the
producer id allocator, and ``orphans`` for objects it uploaded and failed to commit. In S3 it
creates ``data/flush/...`` objects, create-only. Group commit gathers a long-running host's
concurrent requests into one flush; in Lambda each request is its own.

Never: acknowledge before the commit, delete or overwrite an object, or assign offsets
anywhere but in the commit's transaction.
"""
