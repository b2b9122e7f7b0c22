"""The read path: fetch and ListOffsets over committed index items and object bytes.

Reads a partition's ``head`` and index items from DynamoDB and byte ranges of flush objects and
segments from S3, through a local read cache (Lambda's ``/tmp``, an agent's disk). Long polls
wait for commits; answers keep within Kafka's and Lambda's size limits.

Never writes to DynamoDB or S3: a read cannot change the log, and may be repeated anywhere.
"""
