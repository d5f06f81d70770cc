"""Events: the transactional outbox, subscribers, webhooks and the dispatcher."""
