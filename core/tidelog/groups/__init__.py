"""Consumer groups: membership and committed offsets in DynamoDB, assignment by a state machine."""
