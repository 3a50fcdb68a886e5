"""An SDK client session on `recall serve --http`, shared by its tests and its bench."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any


@contextlib.asynccontextmanager
async def bearer_session(url: str, token: str) -> AsyncIterator[Any]:
    """An initialised SDK `ClientSession` over streamable HTTP, sending `token` as its bearer."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(60.0)
        ) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session
