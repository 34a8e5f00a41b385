"""Alembic migrations of the store's schema, applied by :class:`searchsvc.store.Store` when it
opens a database (SQLite or PostgreSQL). A new schema change is a new file in ``versions/``."""
