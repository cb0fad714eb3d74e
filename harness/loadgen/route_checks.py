"""Try a server's routes one by one, as `gate probe` shows them: health, tokenize, one
one-token streamed completion and chat (the same request shape and headers as a load
phase, so a server that refuses them says so here, in its own words), /metrics.

Each check is one small request; a failure is a RouteCheck with the server's words and
the likely cause (harness.loadgen.failures), never an exception.
"""

from __future__ import annotations

import asyncio
import time

import aiohttp

from harness.errors import EndpointError
from harness.loadgen import client
from harness.loadgen.capabilities import RouteCheck
from harness.loadgen.client import Api
from harness.loadgen.failures import hint_for, sample_of
from harness.loadgen.probe import ServerInfo
from harness.loadgen.records import RequestRecord, RequestSpec
from harness.loadgen.tokenizer import NoTokenizer, ServerTokenizer

PROBE_PROMPT = "The capital of France is"


async def _health(session: aiohttp.ClientSession, base: str, path: str) -> bool:
    try:
        async with session.get(base + path) as r:
            return r.status == 200
    except (aiohttp.ClientError, TimeoutError):
        return False


async def _one_token(session: client.Session, info: ServerInfo, model: str,
                     api: Api) -> RouteCheck:
    """One streamed request asking one token."""
    rec = RequestRecord(idx=0, instance=0, doc_id=0, warmup=False, scheduled=0.0)
    body = client.build_body(RequestSpec(PROBE_PROMPT, 1, 0), model, api)
    headers = {**client.base_headers("gate-probe"), "X-Request-ID": client.request_id()}
    t0 = time.monotonic()
    await client.stream(session, info.url + client.route(api), body, headers, rec, t0,
                        api == "chat", None)
    route, purpose = client.route(api), f"completion (1 token, {api} API)"
    if rec.ok:
        usage = "usage reported" if rec.usage_reported else "no usage in the stream"
        return RouteCheck(route, purpose, True, f"TTFT {1000 * (rec.ttft or 0.0):.0f} ms, "
                          f"{usage}", usage_reported=rec.usage_reported)
    sample = sample_of(rec)
    hint = hint_for([sample], api=api, model=model)
    return RouteCheck(route, purpose, False, sample.line() + (f" -> {hint}" if hint else ""))


def _tokenize(info: ServerInfo, model: str) -> tuple[bool, str]:
    try:
        with ServerTokenizer(info.url, model, timeout=10) as tok:
            n = tok.count(PROBE_PROMPT)
            return True, f"{tok.flavor} route, {n} tokens for the probe prompt"
    except NoTokenizer:
        return False, "no known tokenize route answers"
    except EndpointError as exc:
        return False, exc.message


async def check_routes(info: ServerInfo, model: str, timeout: float = 60.0
                       ) -> list[RouteCheck]:
    """One RouteCheck for each route gate uses, in the order a campaign needs them."""
    profile = info.engine.profile if info.engine else None
    health = profile.health if profile else "/health"
    apis: tuple[Api, ...] = ("completions", "chat")
    out: list[RouteCheck] = []
    tmo = aiohttp.ClientTimeout(total=timeout)
    async with aiohttp.ClientSession(timeout=tmo, trust_env=False) as session, \
            client.new_session(timeout, 1) as streams:
        out.append(RouteCheck(health, "health (start / restart waits)",
                              await _health(session, info.url, health)))
        ok, detail = await asyncio.get_running_loop().run_in_executor(
            None, _tokenize, info, model)
        out.append(RouteCheck("tokenize", "tokenize (exact prompt lengths)", ok, detail))
        for api in apis:  # the client and request shape a load phase uses
            out.append(await _one_token(streams, info, model, api))
    n = len(info.metric_names)
    out.append(RouteCheck("/metrics", "engine counters (evidence)", n > 0,
                          f"{n} samples" if n else "no answer"))
    return out
