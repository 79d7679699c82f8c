"""A durable job scheduler that lives in the application's own database."""
