"""``berth.Client`` against a fake ``berth serve`` on 127.0.0.1 that records each request and
answers what the test tells it: the requests it sends, how it pages, what an error answer
becomes, and that its key never leaves the server's origin."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest

from berth.client import Client, ServerConversation, ServerError

if TYPE_CHECKING:
    from pathlib import Path


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


#: An answer: status, headers, body (bytes, or JSON when not bytes).
Answer = tuple[int, dict[str, str], Any]


@dataclass
class FakeServer:
    """Answers each request with ``route(request)``; keeps the requests."""

    base: str = ""
    requests: list[Request] = field(default_factory=list)
    route: Callable[[Request], Answer] = lambda _: (200, {}, {})


def start_fake(server: FakeServer) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def handle_any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            request = Request(
                self.command,
                self.path,
                {k.lower(): v for k, v in self.headers.items()},
                json.loads(raw) if raw else None,
            )
            server.requests.append(request)
            status, headers, body = server.route(request)
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = handle_any

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.base = f"http://127.0.0.1:{http.server_address[1]}"
    threading.Thread(target=http.serve_forever, daemon=True).start()
    return http


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    server = FakeServer()
    http = start_fake(server)
    yield server
    http.shutdown()
    http.server_close()


@pytest.fixture
def other() -> Iterator[FakeServer]:
    """A second fake server: another origin (another port)."""
    server = FakeServer()
    http = start_fake(server)
    yield server
    http.shutdown()
    http.server_close()


CREATED = {
    "id": "0190",
    "lockfile": "version = 1\n",
    "plugins": [{"name": "review", "source": "./review", "hash": "sha256-x"}],
    "plugin_set": {"plugins": [], "skills": []},
}


def test_start_sends_plugin_sources_with_the_key(fake: FakeServer) -> None:
    fake.route = lambda _: (201, {}, CREATED)
    got = Client(fake.base + "/", "k3y").start(
        [
            {"source": "github:acme/review", "ref": "v1", "repo_path": None},
            {"source": "./local", "other": "dropped"},
        ],
        metadata={"user": "ada"},
    )
    assert got == ServerConversation(**CREATED)  # type: ignore[arg-type]
    (request,) = fake.requests
    assert (request.method, request.path) == ("POST", "/api/conversations")
    assert request.headers["x-session-api-key"] == "k3y"
    assert request.headers["content-type"] == "application/json"
    assert request.body == {
        "plugins": [{"source": "github:acme/review", "ref": "v1"}, {"source": "./local"}],
        "metadata": {"user": "ada"},
    }


def test_start_sends_a_lock_from_a_file_or_text(fake: FakeServer, tmp_path: Path) -> None:
    fake.route = lambda _: (201, {}, CREATED)
    lock = tmp_path / "plugins.lock"
    lock.write_text("version = 1\n# from the file\n")
    client = Client(fake.base)
    client.start(lockfile=lock)
    client.start(lock_text="version = 1\n# as text\n")
    assert [r.body for r in fake.requests] == [
        {"lockfile": "version = 1\n# from the file\n"},
        {"lockfile": "version = 1\n# as text\n"},
    ]
    assert "x-session-api-key" not in fake.requests[0].headers


@pytest.mark.parametrize(
    "given",
    [{}, {"plugins": [], "lock_text": "x"}, {"lockfile": "a", "lock_text": "b"}],
)
def test_start_takes_exactly_one_of_plugins_lockfile_and_lock_text(
    fake: FakeServer, given: dict[str, Any]
) -> None:
    with pytest.raises(ValueError, match="give exactly one of plugins, lockfile or lock_text"):
        Client(fake.base).start(**given)
    assert fake.requests == []


def test_reads_go_to_the_conversations_routes(fake: FakeServer) -> None:
    answers: dict[tuple[str, str], Answer] = {
        ("GET", "/api/conversations/a%2Fb"): (200, {}, {"id": "a/b", "plugins": []}),
        ("GET", "/api/conversations/a%2Fb/lockfile"): (200, {}, b"version = 1\n"),
        ("GET", "/api/conversations/a%2Fb/plugin_set"): (200, {}, {"skills": []}),
        ("POST", "/api/conversations/a%2Fb/load_plugin"): (200, {}, {"success": True}),
        ("DELETE", "/api/conversations/a%2Fb"): (204, {}, b""),
    }
    fake.route = lambda r: answers[(r.method, r.path)]
    client = Client(fake.base, "k3y")
    assert client.get("a/b") == {"id": "a/b", "plugins": []}
    assert client.lockfile("a/b") == "version = 1\n"
    assert client.plugin_set("a/b") == {"skills": []}
    assert client.load_plugin("a/b", "review@team") is None
    assert client.delete("a/b") is None
    assert [(r.method, r.path) for r in fake.requests] == list(answers)
    assert fake.requests[3].body == {"plugin_ref": "review@team"}
    assert all(r.headers["x-session-api-key"] == "k3y" for r in fake.requests)


def test_list_follows_next_cursor_until_the_last_page(fake: FakeServer) -> None:
    pages = {
        "": {"conversations": [{"id": "1"}, {"id": "2"}], "next_cursor": "2"},
        "2": {"conversations": [{"id": "3"}], "next_cursor": None},
    }

    def route(request: Request) -> Answer:
        query = request.path.split("?", 1)[1]
        assert query.startswith("limit=2&cursor=")
        return 200, {}, pages[query.removeprefix("limit=2&cursor=")]

    fake.route = route
    assert [c["id"] for c in Client(fake.base).list(page_size=2)] == ["1", "2", "3"]
    assert len(fake.requests) == 2


def test_list_stops_when_the_server_repeats_a_cursor(fake: FakeServer) -> None:
    fake.route = lambda _: (200, {}, {"conversations": [{"id": "a"}], "next_cursor": "same"})
    with pytest.raises(ServerError) as raised:
        Client(fake.base).list(page_size=1)
    assert (raised.value.status, raised.value.code) == (200, "repeated_cursor")
    assert "the cursor 'same' twice" in raised.value.message
    assert len(fake.requests) == 2


@pytest.mark.parametrize(
    ("status", "body", "code", "message"),
    [
        (
            403,
            {"error": {"code": "forbidden", "message": "host `x` is not allowed"}},
            "forbidden",
            "host `x` is not allowed",
        ),
        (502, b"Bad Gateway\n", "http_error", "Bad Gateway"),
        (500, b"", "http_error", "HTTP 500"),
        (422, {"error": "flat"}, "http_error", '{"error": "flat"}'),
    ],
)
def test_an_error_answer_is_a_server_error(
    fake: FakeServer, status: int, body: Any, code: str, message: str
) -> None:
    fake.route = lambda _: (status, {}, body)
    with pytest.raises(ServerError) as raised:
        Client(fake.base).get("c")
    error = raised.value
    assert (error.status, error.code, error.message) == (status, code, message)
    assert str(error) == f"{status} {code}: {message}"


def test_health(fake: FakeServer) -> None:
    fake.route = lambda r: (200, {}, b"ok") if r.path == "/health" else (404, {}, b"")
    assert Client(fake.base).health() is True
    fake.route = lambda _: (503, {}, {"error": {"code": "draining", "message": "stopping"}})
    assert Client(fake.base).health() is False
    # Nothing listens on a port just closed.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    assert Client(f"http://127.0.0.1:{closed}", timeout=5).health() is False


def test_a_redirect_to_another_origin_loses_the_key(fake: FakeServer, other: FakeServer) -> None:
    def route(request: Request) -> Answer:
        if request.path.endswith("/far"):
            return 302, {"Location": other.base + "/api/conversations/far"}, b""
        if request.path.endswith("/near"):
            return 302, {"Location": fake.base + "/api/conversations/kept"}, b""
        return 200, {}, {"id": "kept"}

    fake.route = route
    other.route = lambda _: (200, {}, {"id": "far"})
    client = Client(fake.base, "k3y")
    assert client.get("far") == {"id": "far"}
    assert client.get("near") == {"id": "kept"}
    (far,) = other.requests
    assert "x-session-api-key" not in far.headers
    kept = fake.requests[-1]
    assert (kept.path, kept.headers["x-session-api-key"]) == ("/api/conversations/kept", "k3y")
