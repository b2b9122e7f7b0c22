"""`tidelog console`: topics, messages and consumer lag in the browser (docs/console.md)."""
