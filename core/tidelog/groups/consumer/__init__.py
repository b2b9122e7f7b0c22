"""Consumer groups of KIP-848's protocol (ConsumerGroupHeartbeat): the coordinator assigns, in
the assignment state machine, and reconciles each member to its target, one heartbeat at a
time. Pure rules in model, reconcile and heartbeat; the store in items and coordinator."""
