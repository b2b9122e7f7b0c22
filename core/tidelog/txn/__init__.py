"""Kafka's transactions (KIP-98, KIP-447) as pure rules and the keys of their items: a
transactional id's states and transitions, what an append must find true of its transaction,
markers, and the last stable offset. The log applies them when it commits; the coordinator
(tidelog.transactions) moves transactional ids by them."""
