"""recall on PostgreSQL + pgvector: the same memory and trust layer for a team (SPEC §1).

`recall.open("postgresql://…")` and `--db postgresql://…` open a namespace (a schema, `recall`
by default) through `store.PgStore`; `schema` holds its tables. Importing this package loads
neither psycopg nor the store.
"""

from __future__ import annotations

__all__ = ["is_postgres"]


def is_postgres(target: object) -> bool:
    """Whether `target` names a PostgreSQL memory (`postgresql://…` or `postgres://…`)."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))
