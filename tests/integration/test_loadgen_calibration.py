"""doc-qa calibration over real HTTP: the simulator's /tokenize, and a tiny keep-alive
server that counts connections, drops them, goes away, or speaks TLS."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from loadgen_support.server import ServerConfig, free_port, running_server
from sim_support import engine

from harness.errors import EndpointError
from harness.loadgen import doc_qa
from harness.loadgen.tokenizer import ServerTokenizer
from harness.sim.spec import EngineSpec
from harness.sim.tokenizer import encode

MODEL = "Qwen/Qwen2.5-32B-Instruct"


class _Server(ThreadingHTTPServer):
    """vLLM's POST /tokenize with the simulator's tokenizer. Records the client port of
    every request; `limit`: after that many answers it goes away (closes its socket and
    every connection); `drop`: closes each connection after answering, without saying so
    (what an idle timeout does to a kept-alive connection)."""

    daemon_threads = True

    def __init__(self, limit: int | None = None, drop: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.limit, self.drop = limit, drop
        self.ports: list[int] = []
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()
        self.gone = False

    def go_away(self) -> None:
        with self.lock:
            if self.gone:
                return
            self.gone = True
        threading.Thread(target=self._close_all, daemon=True).start()

    def _close_all(self) -> None:
        self.shutdown()
        self.server_close()
        with self.lock:
            for c in self.conns:
                with contextlib.suppress(OSError):
                    c.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.conns.append(self.connection)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        srv = self.server
        with srv.lock:
            srv.ports.append(self.client_address[1])
            n = len(srv.ports)
        if srv.gone or (srv.limit is not None and n > srv.limit):
            srv.go_away()
            self.close_connection = True
            return
        ids = encode(json.loads(body)["prompt"])
        out = json.dumps({"count": len(ids), "tokens": ids}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
        self.close_connection = srv.drop

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def serving(srv: _Server, tls: ssl.SSLContext | None = None) -> Iterator[str]:
    if tls is not None:
        srv.socket = tls.wrap_socket(srv.socket, server_side=True)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True)
    t.start()
    scheme = "https" if tls else "http"
    try:
        yield f"{scheme}://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.go_away()
        t.join(timeout=10)


def test_workers_give_the_same_prompts_as_one(tmp_path: Path) -> None:
    with engine(EngineSpec(port=0), tmp_path / "state") as url:
        runs = [doc_qa(10, 3000, 32, seed=4, tokenize_url=url, model=MODEL, max_tokens=8,
                       workers=w) for w in (1, 3, 8)]
        shared = doc_qa(6, 3000, 32, seed=4, tokenize_url=url, model=MODEL, prefix_share=0.25,
                        workers=1)
        shared_8 = doc_qa(6, 3000, 32, seed=4, tokenize_url=url, model=MODEL,
                          prefix_share=0.25)
    one = runs[0]
    assert one.calibrated and one.exact and one.params["tokenizer"] == "vllm"
    assert [s.prompt_tokens for s in one.specs] == [3032] * 10
    for wl in runs[1:]:
        assert wl.specs == one.specs
        assert (wl.calibrated, wl.exact, wl.notes, wl.params) == \
            (one.calibrated, one.exact, one.notes, one.params)
    assert shared_8.specs == shared.specs and shared.exact


def test_no_tokenize_route_falls_back_with_one_note() -> None:
    with running_server(ServerConfig(tokenizer=False)) as (url, _):
        wl = doc_qa(6, 200, 10, seed=5, tokenize_url=url, model=MODEL, workers=4)
    assert not wl.calibrated and not wl.exact
    assert wl.notes == ["server has no tokenize route: token counts are estimates"]
    assert all(s.prompt_tokens is None for s in wl.specs)
    assert wl.params["tokenizer"] is None
    assert [s.prompt for s in wl.specs] == [s.prompt for s in doc_qa(6, 200, 10, seed=5).specs]


@pytest.mark.timeout(120)
def test_a_server_that_goes_away_is_an_endpoint_error() -> None:
    srv = _Server(limit=12)
    with serving(srv) as url, pytest.raises(EndpointError) as err:
        doc_qa(16, 2000, 16, seed=3, tokenize_url=url, model=MODEL, workers=4)
    assert err.value.message.startswith("tokenize failed: ")
    assert (err.value.host, err.value.command, err.value.stage) == \
        (url, "POST /tokenize", "calibrate")
    assert len(srv.ports) > 12


def test_one_connection_per_thread_is_kept_alive() -> None:
    srv = _Server()
    with serving(srv) as url:
        wl = doc_qa(8, 1500, 16, seed=2, tokenize_url=url, model=MODEL, workers=2)
        with ServerTokenizer(url, MODEL) as tok:
            counts = [tok.count(f"the kv cache {i}") for i in range(20)]
    assert wl.exact and len(srv.ports) >= 16
    assert len(set(srv.ports[:-20])) <= 2  # doc-qa: one connection per worker
    assert len(set(srv.ports[-20:])) == 1 and tok.connections == 1 and tok.calls == 20
    assert counts[0] == len(encode("the kv cache 0"))


def test_a_dropped_connection_is_reopened_once() -> None:
    srv = _Server(drop=True)
    with serving(srv) as url, ServerTokenizer(url, MODEL) as tok:
        assert [tok.count("one two three") for _ in range(3)] == [len(encode("one two three"))] * 3
    assert tok.connections == 3 and len(set(srv.ports)) == 3


def test_refused_is_an_endpoint_error_as_before() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with ServerTokenizer(url, MODEL) as tok, pytest.raises(EndpointError) as err:
        tok.count("hello")
    assert err.value.message.startswith("tokenize failed: <urlopen error [Errno 111]")
    assert (err.value.host, err.value.command, err.value.stage) == \
        (url, "POST /tokenize", "calibrate")


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


def test_https_is_verified_and_kept_alive(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = _self_signed(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    srv = _Server()
    with serving(srv, tls) as url:
        with ServerTokenizer(url, MODEL) as untrusted, pytest.raises(EndpointError,
                                                                    match="CERTIFICATE"):
            untrusted.count("hello")
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the default context trusts it now
        wl = doc_qa(3, 800, 8, seed=1, tokenize_url=url, model=MODEL, workers=1)
    assert wl.exact and wl.params["tokenizer"] == "vllm"
    assert len(set(srv.ports)) == 1
