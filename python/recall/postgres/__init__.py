"""recall on PostgreSQL + pgvector: the same memory and trust layer for a team (SPEC §1).

`recall.open("postgresql://…")` and `--db postgresql://…` open a namespace (a schema, `recall`
by default) through `store.PgStore`; `schema` holds its tables. Importing this package loads
neither psycopg nor the store.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

__all__ = ["is_postgres", "scrubbed", "shown_db"]

_PASSWORD_PARAM = re.compile(r"([?&]password=)([^&#]*)", re.IGNORECASE)


def is_postgres(target: object) -> bool:
    """Whether `target` names a PostgreSQL memory (`postgresql://…` or `postgres://…`)."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def _netloc(rest: str) -> tuple[str, str]:
    ends = [i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0]
    end = min(ends, default=len(rest))
    return rest[:end], rest[end:]


def shown_db(target: str) -> str:
    """`target` as recall prints it: a `postgresql://` URL without its password (in the user
    part or a `password=` parameter); a file path as it is. Needs no valid URL."""
    if not is_postgres(target):
        return target
    scheme, rest = target.split("://", 1)
    netloc, tail = _netloc(rest)
    if "@" in netloc:
        user, host = netloc.rsplit("@", 1)
        netloc = f"{user.split(':', 1)[0]}@{host}"
    tail = _PASSWORD_PARAM.sub(r"\1***", tail)
    return f"{scheme}://{netloc}{tail}"


def scrubbed(text: str, target: str) -> str:
    """`text` (a driver's error, say) with the password of the URL `target` replaced by ***,
    as written and decoded."""
    if not is_postgres(target):
        return text
    netloc, tail = _netloc(target.split("://", 1)[1])
    secrets = [m.group(2) for m in _PASSWORD_PARAM.finditer(tail)]
    if "@" in netloc and ":" in netloc.rsplit("@", 1)[0]:
        secrets.append(netloc.rsplit("@", 1)[0].split(":", 1)[1])
    for secret in sorted({s for raw in secrets for s in (raw, unquote(raw)) if s}, key=len)[::-1]:
        text = text.replace(secret, "***")
    return text
