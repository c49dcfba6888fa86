"""berth.Client against hostile answers, on 127.0.0.1 only: a redirect to another origin
must not carry X-Session-API-Key (one within the origin keeps it), and a server repeating
`next_cursor` must not make `list()` loop forever. Prints JSON: the key each request
arrived with, the pages served and what the client raised."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from berth.client import Client, ServerError

keys: dict[str, list[str | None]] = {"other": [], "kept": []}
pages = {"count": 0}
urls: dict[str, str] = {}


class Handler(BaseHTTPRequestHandler):
    role = ""

    def log_message(self, *args: object) -> None:
        pass

    def answer(self, doc: object) -> None:
        data = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.role == "loop":
            pages["count"] += 1
            self.answer({"conversations": [{"id": "a"}], "next_cursor": "same"})
        elif self.role == "other":
            keys["other"].append(self.headers.get("X-Session-API-Key"))
            self.answer({"id": "far"})
        elif self.path.endswith("/far"):
            self.send_response(302)
            self.send_header("Location", urls["other"] + "/api/conversations/far")
            self.end_headers()
        elif self.path.endswith("/near"):
            self.send_response(302)
            self.send_header("Location", urls["entry"] + "/api/conversations/kept")
            self.end_headers()
        else:
            keys["kept"].append(self.headers.get("X-Session-API-Key"))
            self.answer({"id": "kept"})


def serve(role: str) -> str:
    handler = type(role, (Handler,), {"role": role})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    urls[role] = f"http://127.0.0.1:{server.server_address[1]}"
    return urls[role]


client = Client(serve("entry"), api_key="k3y")
serve("other")
far = client.get("far")
near = client.get("near")
raised = None
try:
    Client(serve("loop"), api_key="k3y").list(page_size=1)
except ServerError as e:
    raised = {"code": e.code, "message": e.message}
print(
    json.dumps(
        {
            "far": far,
            "near": near,
            "keys": keys,
            "pages": pages["count"],
            "raised": raised,
        }
    )
)
