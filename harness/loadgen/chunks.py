"""A streamed completion's body read into its record, the same whichever HTTP client
carried it (gate's own HTTP/1.1 pool or aiohttp): one parser, so both time alike.

The transport hands over each network read's body bytes with the moment it arrived
(feed); SSE events come out of it, each token chunk's arrival is kept, and the first
failure in the stream ends the request as a record (bad_chunk, stream_error), never an
exception. end() judges a stream that ended as HTTP says it should; close() fills TTFT,
E2EL and the token counts whatever happened. gate's own HTTP/1.1 client may first offer a
read still in chunked transfer coding (take): whole chunks that each carry exactly one
template event are recorded from the raw bytes, as feed would record their data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from harness.loadgen.http1 import SIZE_LINE
from harness.loadgen.records import RequestRecord
from harness.loadgen.sse import SSEDecoder

# The C scanner behind json.loads, without its wrapper: half the cost per chunk.
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_SCANSTR: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
# A JSON string literal's body as json's strict scanner accepts it, ASCII only (a read's
# non-ASCII text takes the per-event path, which decodes UTF-8 and says when it is bad).
# Unrolled (plain run, then escape + plain run, repeated): no two ways to match a byte, so
# a literal that never closes fails in linear time; possessive quantifiers would say it
# shorter, but the load agent runs on Python 3.9, whose re has none.
_PLAIN = rb'[^"\\\x00-\x1f\x80-\xff]*'
_LITERAL_RE = re.compile(_PLAIN + rb'(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})' + _PLAIN + rb')*"')
_LITERAL = _LITERAL_RE.match
_WHOLE_LITERAL = _LITERAL_RE.fullmatch  # (data, pos, endpos): the literal ends at endpos
_SIZE_LINE = SIZE_LINE.match
_NO_WIRE = (b"", b"", 0, 0)  # take() before a template: nothing is a template event
_ERROR_CHARS = 500
_BAD = (ValueError, StopIteration, AttributeError, TypeError, KeyError, IndexError,
        UnicodeDecodeError)


def template(s: str, piece: str, chat: bool) -> tuple[str, str] | None:
    """(prefix, tail) of a token chunk that json.loads accepted: everything before and
    after its text's string literal. A later event that starts with exactly `prefix`, ends
    with exactly `tail` and has one valid JSON string literal between them is the same
    JSON object with another text, so it needs no full parse (most of a stream's chunks
    differ from each other only there). None when the text's position is ambiguous."""
    key = '"content":' if chat else '"text":'
    i = s.find(key)
    if i < 0 or s.find(key, i + 1) >= 0:
        return None
    v = i + len(key)
    while v < len(s) and s[v] in " \t\r\n":
        v += 1
    if v >= len(s) or s[v] != '"':
        return None
    try:
        val, end = _SCANSTR(s, v + 1)
    except ValueError:
        return None
    if val != piece:
        return None
    return s[: v + 1], s[end:]


def event_frame(prefix: str, tail: str) -> tuple[bytes, bytes] | None:
    """The bytes around the text of one whole SSE event `data: <prefix>..."<tail>` + LF LF,
    the template's chunk with any text: at saturation a read brings a dozen such events,
    and three C calls each (the two frames, the literal between) replace the decoder's and
    the template's steps. None when a line end in the template would make the event's
    lines ambiguous."""
    if "\n" in prefix or "\r" in prefix or "\n" in tail or "\r" in tail:
        return None
    return b"data: " + prefix.encode(), tail.encode() + b"\n\n"


def fail(rec: RequestRecord, kind: str, message: str) -> None:
    """Mark `rec` failed: its kind and the message, on one line, cut short."""
    rec.error_kind = kind
    rec.error = " ".join(message.split())[:_ERROR_CHARS]


class ChunkReader:
    """One request's SSE stream into its record (times from `sent`, monotonic)."""

    __slots__ = ("_decode", "_frame", "_raw", "_sse", "_wire", "chat", "chunks", "done",
                 "finished", "last", "plen", "prefix", "rec", "sent", "tail", "text_chunks",
                 "tlen", "usage")

    def __init__(self, rec: RequestRecord, chat: bool, sent: float) -> None:
        self.rec = rec
        self.chat = chat
        self.sent = self.last = sent
        self.chunks = rec.chunk_times
        self._sse = SSEDecoder()
        self._decode = self._sse.feed
        self._frame: tuple[bytes, bytes] | None = None  # see event_frame()
        # take()'s view of the frame: (opening, closing + CRLF, len(opening), len(closing))
        self._wire: tuple[bytes, bytes, int, int] | None = None
        self._raw: tuple[bytes, bytes, int, int] | None = None  # _wire while the SSE is idle
        self.usage: Any = None
        self.done = self.finished = False  # [DONE] seen / a finish_reason seen
        self.text_chunks = 0
        self.prefix: str | None = None  # see template()
        self.tail = ""
        self.plen = self.tlen = 0

    def head(self, status: int) -> None:
        self.rec.status = status

    def feed(self, now: float, data: bytes) -> bool:
        """One read's body bytes, arrived at `now`; False once the stream failed."""
        self.last = now
        t = now - self.sent
        at, n = 0, len(data)
        if self._frame is None and not self.text_chunks:
            # No template yet: the read's events one at a time until one is learned, so
            # the rest of the read takes the batch path below (a client behind the
            # stream reads much of it at once). The decoder gives the same events
            # however a read is split; a line end other than LF LF is not split here.
            find = data.find
            j = find(b"\n\n")
            while 0 <= j < n - 2:  # an event end with more bytes after it
                if not self._events(t, data[at:j + 2]):
                    return False
                at = j + 2
                if self._frame is not None or self.text_chunks:
                    break
                j = find(b"\n\n", at)
        frame = self._frame
        if frame is not None and self._sse.idle:  # whole template events first
            # (ttft_text is set: the template is learned from a chunk with text)
            opening, closing = frame
            chunks, texts = self.chunks, 0
            hlen, elen, literal = len(opening), len(closing), _LITERAL
            while data.startswith(opening, at):
                m = literal(data, at + hlen)
                if m is None or not data.startswith(closing, m.end()):
                    break
                chunks.append(t)
                if m.end() - m.start() > 1:  # not the empty literal
                    texts += 1
                at = m.end() + elen
            self.text_chunks += texts
            if at == n:  # the whole read (the decoder stays idle)
                return True
        # the rest (the first chunks, the last ones, usage, [DONE]) event by event
        return self._events(t, data[at:] if at else data)

    def _events(self, t: float, data: bytes) -> bool:
        """Bytes through the SSE decoder, each event parsed (the template's shortcut
        once one is learned); False once the stream failed."""
        rec = self.rec
        chunks = self.chunks
        prefix, tail, plen, tlen = self.prefix, self.tail, self.plen, self.tlen
        texts = 0  # text chunks in this read (added to text_chunks on the way out)
        try:
            for ev in self._decode(data):
                if ev == b"[DONE]":
                    self.done = True
                    continue
                if not ev:
                    continue
                try:
                    s = ev.decode()
                    if prefix is not None and s.startswith(prefix) and s.endswith(tail):
                        txt, end = _SCANSTR(s, plen)
                        if end == len(s) - tlen:  # same chunk, another text
                            chunks.append(t)
                            if txt:
                                texts += 1
                                if rec.ttft_text is None:
                                    rec.ttft_text = t
                            continue
                    obj, end = _SCAN(s, 0)
                    if end != len(s):
                        obj = json.loads(s)  # trailing whitespace is legal JSON
                    choices = obj.get("choices")
                    if choices:
                        chunks.append(t)
                        c0 = choices[0]
                        if self.chat:
                            delta = c0.get("delta")
                            piece = delta.get("content") if delta else None
                        else:
                            piece = c0.get("text")
                        if piece:
                            texts += 1
                            if rec.ttft_text is None:
                                rec.ttft_text = t
                        reason = c0.get("finish_reason")
                        if reason:
                            self.finished = True
                            rec.finish_reason = str(reason)
                        elif (prefix is None and isinstance(piece, str) and piece
                              and "usage" not in obj and len(choices) == 1):
                            learned = template(s, piece, self.chat)
                            if learned is not None:
                                prefix, tail = learned
                                plen, tlen = len(prefix), len(tail)
                                self.prefix, self.tail = prefix, tail
                                self.plen, self.tlen = plen, tlen
                                frame = self._frame = event_frame(prefix, tail)
                                if frame is not None:
                                    self._wire = (frame[0], frame[1] + b"\r\n",
                                                  len(frame[0]), len(frame[1]))
                    u = obj.get("usage")
                    if u:
                        self.usage = u
                    elif not choices and obj.get("error"):
                        fail(rec, "stream_error", f"server error in stream: {s}")
                        return False
                except _BAD:
                    fail(rec, "bad_chunk", "not an OpenAI stream chunk: "
                         + ev[:200].decode("utf-8", "replace"))
                    return False
            return True
        finally:
            self.text_chunks += texts
            self._raw = self._wire if self._sse.idle else None

    def take(self, now: float, data: bytes) -> int:
        """Whole chunks of a chunked body at the start of `data` (the HTTP parser between
        chunks), arrived at `now`, recorded as feed() would record their data: the bytes
        taken (0: none; the parser reads the rest as if it had read those chunks itself),
        or -1 once the stream failed (as feed's False). A chunk that is exactly one
        template event costs a size line, the template's two frames and one match of the
        literal that the chunk's size puts between them (at saturation most reads are
        one or two such chunks, and this is all their work, de-chunking and SSE
        included); any other whole chunk goes through the per-event path on its own."""
        at, n = 0, len(data)
        size_line, literal, chunks, starts = _SIZE_LINE, _WHOLE_LITERAL, self.chunks, \
            data.startswith
        t = now - self.sent
        texts = 0
        raw = self._raw  # the template, while no event is left open
        opening, closing, hlen, clen = raw if raw is not None else _NO_WIRE
        m = size_line(data)
        while m is not None:
            start = m.end()
            end = start + int(m[1], 16)  # the chunk's data: data[start:end], then CRLF
            if end == start:
                break  # the last chunk: the parser ends the body
            lit, stop = start + hlen, end - clen  # the text's literal: data[lit:stop]
            # (closing ends in the CRLF after the chunk; a literal has at least its `"`)
            if (raw is not None and lit < stop and starts(opening, start)
                    and starts(closing, stop) and literal(data, lit, stop) is not None):
                chunks.append(t)
                if stop - lit > 1:  # not the empty literal
                    texts += 1
            else:  # no template yet (the stream's first chunks), or another event
                if not self._sse.idle or not starts(b"\r\n", end):
                    # an event left open by the last chunk (the parser joins the rest of
                    # the read for feed(), rather than a decoder call a chunk), or a chunk
                    # this read did not bring whole (or a bad one): the parser's
                    break
                if end - start == 14 and starts(b"data: [DONE]\n\n", start):
                    self.done = True  # what the per-event path makes of it, at once
                elif not self._events(t, data[start:end]):
                    self.text_chunks += texts
                    return -1
                if self._raw is not raw:  # a template learned, or an event left open
                    raw = self._raw
                    opening, closing, hlen, clen = raw if raw is not None else _NO_WIRE
            at = end + 2
            if at == n:
                break
            m = size_line(data, at)
        if texts:
            self.text_chunks += texts
        if at:
            self.last = now
        return at

    def end(self) -> None:
        """The body ended as HTTP says it should: was it a whole completion?"""
        n = len(self.chunks)
        if not n:
            fail(self.rec, "no_choices", "the stream ended without a chunk that has "
                 "`choices` (vLLM: 'Never received a valid chunk to calculate TTFT')")
        elif not (self.done or self.finished):
            fail(self.rec, "cut", f"the stream ended without finish_reason or [DONE] "
                 f"after {n} chunks")
        elif self.text_chunks == 0 and not self.rec.output_tokens:
            fail(self.rec, "no_text", "the response carried no generated text")

    def close(self, prompt_tokens: int | None) -> None:
        """TTFT, E2EL and the token counts, whatever ended the request."""
        rec, chunks = self.rec, self.chunks
        if chunks:
            rec.ttft = chunks[0]
            rec.e2el = chunks[-1]  # vLLM: latency = last token chunk - start
        usage = self.usage
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            rec.output_tokens = usage["completion_tokens"]
            pt = usage.get("prompt_tokens")
            rec.prompt_tokens = pt if isinstance(pt, int) else prompt_tokens
            rec.usage_reported = True
        else:
            rec.output_tokens = self.text_chunks
            rec.prompt_tokens = prompt_tokens
            rec.usage_reported = False
