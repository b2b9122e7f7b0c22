"""The log: topics, the durable write path, and reading back what was committed."""
