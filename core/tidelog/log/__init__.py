"""The log: Kafka's partitions as index items in DynamoDB over objects in S3.

Three paths, one subpackage each, over what they share here:

- ``write/``: produce. Validated batches in, offsets out, acknowledged only after the commit.
- ``read/``: fetch and ListOffsets. Reads committed index items and object bytes; never writes.
- ``lifecycle/``: housekeeping. Roll, retention, compaction and garbage collection.

Shared by all three: ``keys`` (every item and object key), ``entries`` (an index item: which
object bytes hold which offsets), ``head`` (a partition's high watermark and log start),
``topics`` and ``configs``, ``due`` (which partitions housekeeping must visit), ``flushobject``
and ``segment`` (the two object formats), ``scan`` (an object's batches), ``garbage`` (how
writers and jobs hand objects to the collector) and ``claims`` (local directories).
The three never import one another.
"""
