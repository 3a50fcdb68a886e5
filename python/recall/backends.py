"""Where a memory lives: the one place a backend is chosen from a `--db` value (a file path or
a `postgresql://` URL), beside the backends it chooses between.

Owns: `Location` (what the place can do: is it shared by machines, is there a file to salvage,
where the index run journals), `named` (the store a command names: `--db`, `$RECALL_DB`, the
namespace) and `locate`. Does not own: the contract a backend implements (`recall.store`) or
the backends (`recall._core.Store`, `recall.postgres.store.PgStore`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from recall.store import Store

__all__ = ["Location", "locate", "named"]


@dataclass(frozen=True)
class Location:
    """Where a memory lives, as a `--db` value names it: a file, or a PostgreSQL namespace."""

    #: The path or URL as given (a namespace carried in the URL's `namespace=` parameter).
    target: str
    namespace: str | None = None

    @property
    def shared(self) -> bool:
        """A server several machines may write to, rather than a file on this one."""
        from recall.postgres import is_postgres

        return is_postgres(self.target)

    @property
    def file(self) -> str | None:
        """The store file, or None for a server."""
        return None if self.shared else self.target

    @property
    def shown(self) -> str:
        """The location for messages, without a password."""
        from recall.postgres import shown_db

        return shown_db(self.target)

    def described(self) -> list[tuple[str, str]]:
        """(label, value) rows naming the location for people: the file, or the server and
        the namespace."""
        if self.file is not None:
            return [("store", self.file)]
        from urllib.parse import parse_qs, urlsplit

        namespace = (
            self.namespace or parse_qs(urlsplit(self.target).query).get("namespace", ["recall"])[-1]
        )
        return [("store", self.shown.split("?", 1)[0]), ("namespace", namespace)]

    def exists(self) -> bool:
        """Whether a memory is there yet (a file, or a namespace with its tables): reads never
        create one."""
        if self.file is not None:
            return os.path.exists(self.file)
        from recall.postgres.store import namespace_exists

        return namespace_exists(self.target, self.namespace)

    def open(self, *, read_only: bool = False, create: bool = False) -> Store | None:
        """The store, or None when a file does not exist yet and `create` is not asked (a
        server namespace is made by its first write, so its store always opens)."""
        from recall import _core

        if self.file is None:
            from recall.postgres.store import PgStore

            return PgStore(self.target, namespace=self.namespace, read_only=read_only)
        if not create and not read_only and not os.path.exists(self.file):
            return None
        return _core.Store(self.file, create=create, read_only=read_only)

    def journal(self) -> Path | None:
        """Where an index run journals its vectors: beside a store file, else nowhere."""
        if self.file is None or self.file in ("", ":memory:"):
            return None
        from recall.embedding_journal import journal_path

        return journal_path(self.file)


def named(db: str | None, namespace: str | None = None, *, environment: bool = True) -> str:
    """The store a command names: `--db`, else `$RECALL_DB`, else `./recall.db`; a namespace
    (`--namespace`, else `$RECALL_NAMESPACE` for a server) is carried in a `postgresql://` URL
    as its `namespace=` parameter. `--namespace` on a file is a UsageError; the variable, set
    for a server, does not stop a command on a file (`environment=False`: the variables are
    not read, as `migrate`, which names both of its stores, does not)."""
    from urllib.parse import urlencode

    from recall.errors import UsageError

    target = db if db is not None else os.environ.get("RECALL_DB") or "recall.db"
    if namespace is None and environment and Location(target).shared:
        namespace = os.environ.get("RECALL_NAMESPACE") or None
    if namespace is None:
        return target
    if not Location(target).shared:
        raise UsageError(f"--namespace applies to a postgresql:// store, not {target}")
    sep = "&" if "?" in target else "?"
    return f"{target}{sep}{urlencode({'namespace': namespace})}"


def locate(target: str, namespace: str | None = None) -> Location:
    """The location a `--db` value (or `recall.open`'s path) names: the one place a backend
    is chosen. A namespace applies to a server only."""
    from recall.errors import UsageError

    location = Location(target, namespace)
    if namespace is not None and not location.shared:
        raise UsageError("recall: namespace applies to a postgresql:// store, not a file")
    return location


if TYPE_CHECKING:
    # Both backends implement the contract: mypy checks each against it here.
    from recall._core import Store as _FileStore
    from recall.postgres.store import PgStore as _ServerStore

    def _conforms(file: _FileStore, server: _ServerStore) -> tuple[Store, Store]:
        return file, server
