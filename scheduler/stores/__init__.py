"""Store implementations: SQLite (embedded default) and PostgreSQL (several instances)."""
