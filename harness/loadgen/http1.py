"""HTTP/1.1 on the wire for the load generator's hot path: a request head out, a response
in (RFC 9112), as pure code with no socket, so every framing rule is tested on bytes.

Why our own: aiohttp's per-request cost was most of the client's CPU at saturation
(docs/design.md, "gate's own HTTP/1.1 client"). Only what a streamed completion needs:
a POST out; a status line, headers, and a body framed by chunked transfer coding
(extensions and trailers skipped), Content-Length or the connection's close. Interim 1xx
answers are skipped. Lenient where aiohttp is (bare LF line ends), strict where a wrong
guess would corrupt the stream (chunk sizes, lengths); a malformed response raises
ParseError, never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from harness.errors import ParseError

_HEX = b"0123456789abcdefABCDEF"
# a plain chunk-size line (no extension): the fast paths' (here and chunks.ChunkReader.take);
# anything else takes chunk_size
SIZE_LINE = re.compile(rb"([0-9a-fA-F]{1,15})\r\n")
MAX_HEAD = 64 * 1024  # status line + headers; aiohttp allows 8190 per line
MAX_LINE = 8 * 1024  # one chunk-size line or trailer line

# where the parser is in the message
_HEAD, _SIZE, _DATA, _DATA_END, _TRAILER, _LENGTH, _CLOSE, _DONE = range(8)


@dataclass(frozen=True)
class Target:
    """Where an http:// URL's requests go."""

    host: str
    port: int
    path: str
    authority: str  # the Host header


def target(url: str) -> Target | None:
    """The Target of a plain http:// URL this client speaks; None for anything else
    (https, credentials in the URL, a path that needs quoting), which aiohttp keeps."""
    parts = urlsplit(url)
    if parts.scheme.lower() != "http" or not parts.hostname or "@" in parts.netloc:
        return None
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    if not path.isascii() or any(c <= " " or c == "\x7f" for c in path):
        return None
    try:
        port = parts.port or 80
    except ValueError:
        return None
    return Target(parts.hostname, port, path, parts.netloc)


def request_head(path: str, host: str, headers: Mapping[str, str], length: int) -> bytes:
    """A POST's request line and headers, Content-Length last. A CR or LF inside a name or
    value would end the header early and let it inject others: ValueError instead."""
    return head_start(path, host, headers) + b"Content-Length: %d\r\n\r\n" % length


def head_start(path: str, host: str, headers: Mapping[str, str]) -> bytes:
    """request_head() up to its Content-Length line (a phase's requests share it: see
    request_head_with_id); ValueError for a CR or LF inside a name or value."""
    text = (f"POST {path} HTTP/1.1\r\nHost: {host}\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in headers.items()))
    lines = len(headers) + 2  # request line, Host
    if text.count("\n") != lines or text.count("\r") != lines or " " in path:
        raise ValueError("a CR, LF or space inside the request line or a header")
    return text.encode()


def request_head_with_id(start: bytes, request_id: str, length: int) -> bytes:
    """head_start()'s bytes, then X-Request-ID and Content-Length: what request_head gives
    for the same headers with X-Request-ID last, at a fraction of its cost per request."""
    if "\r" in request_id or "\n" in request_id:
        raise ValueError("a CR or LF inside the request id")
    return b"%sX-Request-ID: %s\r\nContent-Length: %d\r\n\r\n" % (
        start, request_id.encode(), length)


def chunk_size(line: bytes) -> int:
    """The size on a chunk-size line (its CR already stripped), extensions ignored."""
    semi = line.find(b";")
    if semi >= 0:
        line = line[:semi].rstrip(b" \t")
    if not line or len(line) > 15 or line.strip(_HEX):
        raise ParseError(f"bad chunk size line {line[:40]!r}", stage="http")
    return int(line, 16)


# A head as read: its bytes (with the empty line), status, reason, headers, and the
# parser's state right after it (keep_alive, mode, bytes due, done).
_Known = tuple[bytes, int, str, dict[str, str], bool, int, int, bool]


class ResponseParser:
    """One HTTP/1.1 response, fed as the network delivers it.

    feed() returns the body bytes the read completed (b"" when none); `status` is 0 until
    the final (non-1xx) head is read; `done` once the body ended; `keep_alive` whether
    the connection may carry another request after it (False also when bytes followed
    the response, which no request asked for). eof() is the connection's close.

    `like`: the parser of the connection's previous response. A head byte for byte the
    same as its (a server's streamed answers differ in the Date line only, once a
    second) takes its reading instead of a parse: the head was ~10 % of the client's
    CPU at saturation. `headers` may then be `like`'s own dict: read it, never write."""

    __slots__ = ("_buf", "_known", "_left", "_like", "_mode", "_trailer", "done", "headers",
                 "keep_alive", "reason", "status")

    def __init__(self, like: ResponseParser | None = None) -> None:
        self.status = 0
        self.reason = ""
        self.headers: dict[str, str] = {}
        self.keep_alive = True
        self.done = False
        self._buf = b""
        self._mode = _HEAD
        self._left = 0  # body bytes still due: of the chunk (_DATA) or of the length
        self._trailer = 0  # trailer bytes seen (bounded like the head)
        self._known: _Known | None = None  # this response's head, once read
        self._like = like._known if like is not None else None  # (no chain of parsers)

    @property
    def between_chunks(self) -> bool:
        """In a chunked body, before a chunk-size line, nothing held back: whole chunks
        may be taken off the next read (see chunks.ChunkReader.take) and the parser left
        as it is, as if it had read them itself."""
        return self._mode == _SIZE and not self._buf

    def feed_head(self, data: bytes) -> bytes:
        """feed() until the final head has been read (`status` set), stopping right after
        it: the bytes that followed it, still in the body's transfer coding, for feed()
        (or whole chunks taken elsewhere first, see between_chunks); b"" while the head
        has not ended (what came is kept). After the head it is feed()'s input as is."""
        if self._buf:
            data = self._buf + data
            self._buf = b""
        if self._mode != _HEAD:
            return data
        return self._head(data)

    def feed(self, data: bytes) -> bytes:
        if self._buf:
            data = self._buf + data
            self._buf = b""
        mode = self._mode
        if mode == _HEAD:
            data = self._head(data)
            mode = self._mode
            if mode == _HEAD or not data:
                return b""
        if mode == _LENGTH:
            left = self._left
            if len(data) < left:
                self._left = left - len(data)
                return data
            self._finish(data[left:])
            return data[:left]
        if mode == _CLOSE:
            return data
        if mode == _DONE:
            if data:
                self.keep_alive = False  # bytes no request asked for
            return b""
        return self._chunked(data)

    def eof(self) -> None:
        """The server closed the connection: the end of a close-delimited body, else a
        ParseError saying what was still due."""
        if self._mode == _CLOSE:
            self._finish(b"")
        elif self._mode == _HEAD:
            raise ParseError("the connection closed before a status line", stage="http")
        elif self._mode != _DONE:
            due = (f"{self._left} more bytes of the Content-Length" if self._mode == _LENGTH
                   else "the rest of the chunked body")
            raise ParseError(f"the connection closed with {due} still due", stage="http")

    def _finish(self, extra: bytes) -> None:
        self._mode = _DONE
        self.done = True
        if extra:
            self.keep_alive = False

    def _head(self, data: bytes) -> bytes:
        """Read heads (interim 1xx ones skipped) off `data`; the rest is body."""
        like = self._like
        if like is not None and data.startswith(like[0]):
            (raw, self.status, self.reason, self.headers, self.keep_alive, self._mode,
             self._left, self.done) = like
            self._known = like
            return data[len(raw):]
        start = data
        while True:
            # the head ends at its first empty line: CRLF CRLF, or bare LF ends
            crlf = data.find(b"\n\r\n")
            lf = data.find(b"\n\n")
            if lf >= 0 and (crlf < 0 or lf < crlf):
                end, skip = lf, 2
            elif crlf >= 0:
                end, skip = crlf, 3
            else:
                if len(data) > MAX_HEAD:
                    raise ParseError(f"no end of the response head in {MAX_HEAD} bytes",
                                     stage="http")
                self._buf = data
                return b""
            if end > MAX_HEAD:
                raise ParseError(f"a response head over {MAX_HEAD} bytes", stage="http")
            status = self._parse_head(data[:end])
            data = data[end + skip:]
            if status >= 200:
                break
            self.headers = {}
            start = b""  # after an interim answer: nothing to know the next one by
        self.status = status
        self._framing()
        if start:
            self._known = (start[:len(start) - len(data)], status, self.reason, self.headers,
                           self.keep_alive, self._mode, self._left, self.done)
        return data

    def _parse_head(self, head: bytes) -> int:
        lines = head.split(b"\n")
        line = lines[0].rstrip(b"\r")
        if (not line.startswith(b"HTTP/1.") or len(line) < 12 or line[7:8] not in b"01"
                or line[8:9] != b" " or not line[9:12].isdigit()
                or line[12:13] not in (b"", b" ")):
            raise ParseError(f"bad status line {line[:80]!r}", stage="http")
        status = int(line[9:12])
        if status < 100 or status == 101:
            raise ParseError(f"status {status} is not an answer to a POST", stage="http")
        self.reason = line[13:].decode("latin-1").strip()
        if line[7:8] == b"0":
            self.keep_alive = False  # HTTP/1.0: closes unless it says keep-alive
        headers = self.headers
        name = ""
        for raw in lines[1:]:
            raw = raw.rstrip(b"\r")
            if raw[:1] in (b" ", b"\t") and name:  # obsolete line folding
                headers[name] += " " + raw.strip(b" \t").decode("latin-1")
                continue
            key, sep, value = raw.partition(b":")
            if not sep or not key or key != key.strip(b" \t"):
                raise ParseError(f"bad header line {raw[:80]!r}", stage="http")
            name = key.decode("latin-1").lower()
            text = value.strip(b" \t").decode("latin-1")
            headers[name] = f"{headers[name]}, {text}" if name in headers else text
        return status

    def _framing(self) -> None:
        """How the body is delimited (RFC 9112 6.3), and whether the connection stays."""
        h = self.headers
        conn = h.get("connection", "").lower()
        if "close" in conn:
            self.keep_alive = False
        elif "keep-alive" in conn:
            self.keep_alive = True
        if self.status in (204, 304):
            self._finish(b"")
            return
        te = h.get("transfer-encoding")
        cl = h.get("content-length")
        if te is not None:
            if cl is not None:
                self.keep_alive = False  # both: TE wins, and the connection is suspect
            if te.rsplit(",", 1)[-1].strip().lower() == "chunked":
                self._mode = _SIZE
            else:
                self._mode = _CLOSE
                self.keep_alive = False
        elif cl is not None:
            sizes = {v.strip() for v in cl.split(",")}
            size = sizes.pop() if len(sizes) == 1 else ""
            if not size.isdigit() or len(size) > 18:
                raise ParseError(f"bad Content-Length {cl[:40]!r}", stage="http")
            self._left = int(size)
            self._mode = _LENGTH
            if not self._left:
                self._finish(b"")
        else:
            self._mode = _CLOSE
            self.keep_alive = False

    def _chunked(self, data: bytes) -> bytes:
        """Chunk data out of `data`; what a read ended in the middle of waits in _buf."""
        out: list[bytes] = []
        pos, n = 0, len(data)
        mode, left = self._mode, self._left
        if mode == _SIZE:  # fast path: whole chunks, plain size lines (what servers send)
            match = SIZE_LINE.match
            m = match(data)
            while m is not None:
                start = m.end()
                end = start + int(m[1], 16)
                if end == start:  # the last chunk: the body ends here without trailers
                    if not data.startswith(b"\r\n", start):
                        break  # trailers, or a read that ends before their end
                    self._finish(data[start + 2:])
                    return out[0] if len(out) == 1 else b"".join(out)
                if data[end:end + 2] != b"\r\n":
                    break  # a chunk this read did not bring whole
                out.append(data[start:end])
                pos = end + 2
                m = match(data, pos)
        while pos < n:
            if mode == _DATA:
                take = left if left <= n - pos else n - pos
                out.append(data[pos:pos + take])
                pos += take
                left -= take
                if not left:
                    mode = _DATA_END
            elif mode == _SIZE:
                j = data.find(b"\n", pos)
                if j < 0:
                    if n - pos > MAX_LINE:
                        raise ParseError("a chunk size line too long", stage="http")
                    break
                size = chunk_size(data[pos:j - 1] if data[j - 1:j] == b"\r" and j > pos
                                  else data[pos:j])
                pos = j + 1
                if size:
                    mode, left = _DATA, size
                else:
                    mode = _TRAILER
            elif mode == _DATA_END:
                c = data[pos:pos + 2]
                if c == b"\r\n":
                    pos += 2
                elif c[:1] == b"\n":
                    pos += 1
                elif c == b"\r":
                    break  # its LF is in the next read
                else:
                    raise ParseError(f"chunk data not followed by CRLF: {c!r}", stage="http")
                mode = _SIZE
            else:  # _TRAILER: fields after the last chunk, up to an empty line
                j = data.find(b"\n", pos)
                if j < 0:
                    if n - pos > MAX_LINE:
                        raise ParseError("a trailer line too long", stage="http")
                    break
                line = data[pos:j]
                pos = j + 1
                self._trailer += len(line)
                if self._trailer > MAX_HEAD:
                    raise ParseError(f"trailers over {MAX_HEAD} bytes", stage="http")
                if line in (b"", b"\r"):
                    self._finish(data[pos:])
                    return b"".join(out)
        self._mode, self._left = mode, left
        if pos < n:
            self._buf = data[pos:]
        if len(out) == 1:
            return out[0]
        return b"".join(out)
