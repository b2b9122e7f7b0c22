"""The transaction coordinator without a coordinator process: any agent (or function) serves
any transactional id, moving its item by the rules of tidelog.txn with conditional writes,
writing markers through the log's commit path and committing a transaction's offsets."""
