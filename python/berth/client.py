"""A client for ``berth serve`` (docs/spec.md §7), standard library only.

Each call is one HTTP request; an error answer becomes a :class:`ServerError` carrying the
server's status, ``code`` and ``message``. Plugin sets come back as JSON, or as the
OpenHands SDK's own objects through the same converter ``berth.openhands`` uses (the SDK
is imported only then; its paths name the server's store, so the caller must see that
store, as an agent server next to ``berth serve`` does).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.client import HTTPMessage
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from openhands.sdk.agent.base import AgentBase
    from openhands.sdk.hooks import HookConfig
    from openhands.sdk.plugin import PluginSource

    from berth.openhands import SdkPluginSet
    from berth.types import (
        ConversationCreated,
        ConversationDetail,
        ConversationList,
        ConversationSummary,
        CreateConversation,
        JsonValue,
        LockedPluginBody,
        PluginSet,
        PluginSourceBody,
    )

__all__ = ["Client", "ServerConversation", "ServerError"]


class ServerError(Exception):
    """The server answered with an error: ``status`` (HTTP), ``code`` and ``message`` (its
    ``{"error": {"code", "message"}}`` body), e.g. 403 ``forbidden``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ServerConversation:
    """A conversation as ``POST /api/conversations`` created it."""

    id: str
    #: Its ``plugins.lock``, as text.
    lockfile: str
    #: The locked plugins.
    plugins: list[LockedPluginBody]
    #: The merged plugin set (docs/spec.md §5).
    plugin_set: PluginSet


class Client:
    """``Client("http://127.0.0.1:8000", api_key)`` talks to one ``berth serve``."""

    def __init__(self, url: str, api_key: str | None = None, timeout: float = 300.0) -> None:
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout

    def start(
        self,
        plugins: Sequence[PluginSource | PluginSourceBody | Mapping[str, Any]] | None = None,
        *,
        lockfile: str | os.PathLike[str] | None = None,
        lock_text: str | None = None,
        metadata: JsonValue = None,
    ) -> ServerConversation:
        """Starts a conversation from plugin sources (the SDK's ``PluginSource`` or
        ``{"source", "ref", "repo_path"}`` mappings, which the server locks) or from a
        lock (a ``lockfile`` path or its ``lock_text``). Exactly one must be given."""
        given = [x is not None for x in (plugins, lockfile, lock_text)]
        if sum(given) != 1:
            raise ValueError("give exactly one of plugins, lockfile or lock_text")
        body: CreateConversation = {}
        if plugins is not None:
            body["plugins"] = [_source(p) for p in plugins]
        else:
            body["lockfile"] = (
                lock_text if lock_text is not None else Path(lockfile or "").read_text()
            )
        if metadata is not None:
            body["metadata"] = metadata
        answer: ConversationCreated = self._request("POST", "/api/conversations", body)
        return ServerConversation(
            id=answer["id"],
            lockfile=answer["lockfile"],
            plugins=answer["plugins"],
            plugin_set=answer["plugin_set"],
        )

    def list(self, page_size: int = 1000) -> list[ConversationSummary]:
        """Every conversation's id and summary, oldest first (ids are time-ordered), read
        ``page_size`` at a time; on a fleet sharing object storage, every server's."""
        conversations: list[ConversationSummary] = []
        cursor = ""
        seen: set[str] = set()
        while True:
            query = urllib.parse.urlencode({"limit": page_size, "cursor": cursor})
            page: ConversationList = self._request("GET", f"/api/conversations?{query}")
            conversations.extend(page["conversations"])
            cursor = page.get("next_cursor") or ""
            if not cursor:
                return conversations
            # A cursor given twice would page forever: the server is not listing forward.
            if cursor in seen:
                raise ServerError(
                    200,
                    "repeated_cursor",
                    f"the server gave the cursor {cursor!r} twice; listing stopped",
                )
            seen.add(cursor)

    def get(self, conversation_id: str) -> ConversationDetail:
        """A conversation's metadata and locked plugins."""
        detail: ConversationDetail = self._request("GET", self._path(conversation_id))
        return detail

    def lockfile(self, conversation_id: str) -> str:
        """A conversation's ``plugins.lock``, as text."""
        text: str = self._request("GET", self._path(conversation_id, "lockfile"), raw=True)
        return text

    def plugin_set(self, conversation_id: str) -> PluginSet:
        """A conversation's merged plugin set (docs/spec.md §5), from its lock and the store."""
        doc: PluginSet = self._request("GET", self._path(conversation_id, "plugin_set"))
        return doc

    def sdk_plugin_set(self, conversation_id: str) -> SdkPluginSet:
        """The plugin set as the OpenHands SDK's objects (see ``berth.openhands.to_sdk``)."""
        from berth.openhands import to_sdk

        return to_sdk(self.plugin_set(conversation_id))

    def load_plugins(
        self,
        conversation_id: str,
        agent: AgentBase,
        max_skills: int = 100,
        get_secret: Callable[[str], str | None] | None = None,
    ) -> tuple[AgentBase, HookConfig | None]:
        """``berth.openhands.load_plugins`` for a conversation the server keeps."""
        from berth.openhands import merge_into

        return merge_into(agent, self.sdk_plugin_set(conversation_id), max_skills, get_secret)

    def load_plugin(self, conversation_id: str, plugin_ref: str) -> None:
        """``POST /api/conversations/{id}/load_plugin``: locks ``NAME@MARKETPLACE`` into the
        conversation's lock (a marketplace its lock holds, or one the server registers),
        as the OpenHands agent server's route of the same name loads it; ``plugin_set``
        shows it from then on, after a restart too."""
        self._request(
            "POST", self._path(conversation_id, "load_plugin"), {"plugin_ref": plugin_ref}
        )

    def delete(self, conversation_id: str) -> None:
        """Removes a conversation (its store entries become collectable)."""
        self._request("DELETE", self._path(conversation_id))

    def health(self) -> bool:
        """Whether the server answers ``GET /health``."""
        try:
            self._request("GET", "/health", raw=True)
        except (ServerError, OSError):
            return False
        return True

    @staticmethod
    def _path(conversation_id: str, *rest: str) -> str:
        parts = [urllib.parse.quote(conversation_id, safe=""), *rest]
        return "/api/conversations/" + "/".join(parts)

    def _request(self, method: str, path: str, body: Any = None, *, raw: bool = False) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.api_key:
            request.add_header("X-Session-API-Key", self.api_key)
        try:
            with _OPENER.open(request, timeout=self.timeout) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as e:
            raise _server_error(e.code, e.read().decode(errors="replace")) from None
        if raw:
            return text
        return json.loads(text) if text else None


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    return (parts.scheme.lower(), (parts.hostname or "").lower(), parts.port or default)


class _SameOriginKey(urllib.request.HTTPRedirectHandler):
    """Follows redirects as urllib does, but never carries ``X-Session-API-Key`` to
    another origin (scheme, host, port): urllib copies every header to the new request."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(newurl) != _origin(req.full_url):
            for name in list(new.headers):
                if name.lower() == "x-session-api-key":
                    del new.headers[name]
            for name in list(new.unredirected_hdrs):
                if name.lower() == "x-session-api-key":
                    del new.unredirected_hdrs[name]
        return new


_OPENER = urllib.request.build_opener(_SameOriginKey())


def _server_error(status: int, text: str) -> ServerError:
    try:
        error = json.loads(text)["error"]
        return ServerError(status, str(error["code"]), str(error["message"]))
    except (ValueError, KeyError, TypeError):
        return ServerError(status, "http_error", text.strip() or f"HTTP {status}")


def _source(plugin: PluginSource | PluginSourceBody | Mapping[str, Any]) -> PluginSourceBody:
    fields: Mapping[str, Any] = plugin if isinstance(plugin, Mapping) else plugin.model_dump()
    body = {k: fields[k] for k in ("source", "ref", "repo_path") if fields.get(k) is not None}
    return cast("PluginSourceBody", body)
