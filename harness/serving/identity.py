"""What an engine instance is, and whether two arms differ in anything but the accelerator.

Why: a baseline launched with slower flags (another --speed, --max-num-seqs,
--gpu-memory-utilization, --enforce-eager, ...) inflates the gain and PASSes wrongly. G3
compares what actually runs — the argv and environment of the process listening on each
endpoint (harness.probes.process) and what the server reports about itself — instance i
of the baseline against instance i of the accelerated arm. Every difference blocks a PASS
unless a configured glob allows its key; a short list of session-noise variables is
ignored. Facts are flat `prefix:name -> str`; secret values are hashed on the way in
(harness.probes.redact), so facts and messages can be stored and shown. What code runs
(`proc:`, `pkg:`, `model:`: harness/serving/running.py) and a declared proxy's own facts
(`proxy:...`) are compared the same way; interpreter and preload variables
(INTERPRETER_ENV: PYTHONPATH, LD_PRELOAD, ...) are never noise, and a difference in what
code runs is named first.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.config.knobs import CODE_PREFIXES, INTERPRETER_ENV, PROXY
from harness.probes.prometheus import parse_metrics
from harness.probes.redact import looks_secret, option_name, redact, redact_argv
from harness.reasons import Reason, listed
from harness.serving.problems import JSON
from harness.serving.running import LIBS, libs_detail, libs_detail_why

# Environment variables that say how a login or service instance was entered, not how the
# engine runs; they differ between any two launches, so comparing them would block every
# run. Everything else counts (HOME and USER too: they move caches and permissions).
NOISE_ENV = frozenset({
    "PWD", "OLDPWD", "_", "SHLVL",  # the launching shell's cwd bookkeeping, last command
    "INVOCATION_ID", "JOURNAL_STREAM", "SYSTEMD_EXEC_PID", "MANAGERPID",  # per systemd start
    "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY", "SSH_AUTH_SOCK",  # per SSH session
    "XDG_SESSION_ID", "XDG_SESSION_TYPE", "XDG_SESSION_CLASS",  # per login session
    "TERM", "COLORTERM", "LS_COLORS", "MAIL",  # the terminal and mailbox of the login
    "TMUX", "TMUX_PANE", "STY", "WINDOW",  # the tmux / screen window it was typed in
    "SUDO_COMMAND",  # the sudo command line that launched it (Ansible's become puts a
                     # per-task marker in it); SUDO_USER / SUDO_UID still count
})
assert not NOISE_ENV & INTERPRETER_ENV, "what selects the code that runs is never noise"
ENV_UNREADABLE = "proc:environ"  # fact present (= "unreadable") when env could not be read
INSTANCES = "instances"  # the key of an instance-count mismatch (never allowed)
_SHOWN = 40


def argv_facts(argv: Sequence[str]) -> dict[str, str]:
    """argv as `argv:program`, `argv:#N` (N-th positional, from 1) and `argv:--opt` facts.

    `--opt=v` and `--opt v` are the same fact; a word after an option is its value unless
    it starts with '-' (a negative number is a value); an option alone is "true"; a
    repeated option joins its values with "\\n"; after `--` every word is positional. A
    secret-named option's value is hashed and always taken (a secret may start with '-').
    """
    facts: dict[str, str] = {}
    argv = redact_argv(argv)
    if not argv:
        return facts
    facts["argv:program"] = argv[0]
    positional, i, rest_positional = 0, 1, False

    def add(key: str, value: str) -> None:
        facts[key] = facts[key] + "\n" + value if key in facts else value

    while i < len(argv):
        token = argv[i]
        name = None if rest_positional else option_name(token)
        if token == "--" and not rest_positional:
            rest_positional = True
        elif name is None:
            positional += 1
            add(f"argv:#{positional}", token)
        else:
            secret = looks_secret(name.lstrip("-"))
            if "=" in token:
                value = token.split("=", 1)[1]
            elif i + 1 < len(argv) and (secret or option_name(argv[i + 1]) is None) \
                    and argv[i + 1] != "--":
                value = argv[i + 1]
                i += 1
            else:
                value = "true"
            add(f"argv:{name}", value)  # a secret one hashed by redact_argv
        i += 1
    return facts


def engine_facts(argv: Sequence[str], env: Mapping[str, str] | None,
                 server: Mapping[str, str] | None = None) -> dict[str, str]:
    """Everything one engine instance is: argv facts, `env:NAME` (None: unreadable, noted
    as ENV_UNREADABLE so it cannot pass for "no difference") and `server:KEY`."""
    facts = argv_facts(argv)
    if env is None:
        facts[ENV_UNREADABLE] = "unreadable"
    else:
        facts.update({f"env:{k}": redact(k, v) for k, v in env.items()})
    for key, value in (server or {}).items():
        facts[f"server:{key}"] = redact(key.rsplit(".", 1)[-1], value)
    return facts


def _scalar(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _flatten(prefix: str, value: object, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}", v, out)
    else:
        out[prefix] = _scalar(value)


# Model-card keys that change with every start (or list them again): not configuration.
_CARD_SKIP = frozenset({"created", "permission", "object", "data"})


def server_config(models_json: JSON, version_json: JSON,
                  metrics_text: str | None) -> dict[str, str]:
    """What the server says about itself, flat: `version` (/version), `model.<key>` and
    nested blocks such as `gate_sim.config.speed` or `parallel_config.*` from the first
    /v1/models card, and the labels of every `*_info` gauge on /metrics
    (`vllm:cache_config_info` -> `cache_config.block_size`; others keep their name:
    `python_info.version`, `gate_sim_info.tp`). Several samples of one family (one per
    engine) join their values with "\\n" in label order. A body of another shape (an error
    page, a list) says nothing: it adds no key."""
    out: dict[str, str] = {}
    if isinstance(version_json, Mapping) and "version" in version_json:
        out["version"] = _scalar(version_json["version"])
    cards = models_json.get("data") if isinstance(models_json, Mapping) else None
    if isinstance(cards, list) and cards and isinstance(cards[0], Mapping):
        out["models"] = "\n".join(str(c.get("id")) for c in cards if isinstance(c, Mapping))
        for key, value in cards[0].items():
            if key in _CARD_SKIP:
                continue
            _flatten(key if isinstance(value, Mapping) else f"model.{key}", value, out)
    if metrics_text:
        infos: dict[str, list[dict[str, str]]] = {}
        for s in parse_metrics(metrics_text, at=0.0).samples:
            if s.name.endswith("_info"):
                infos.setdefault(s.name, []).append(dict(s.labels))
        for name, samples in infos.items():
            prefix = name.removeprefix("vllm:").removesuffix("_info") \
                if name.startswith("vllm:") else name
            for labels in sorted(samples, key=lambda d: sorted(d.items())):
                for label, value in labels.items():
                    key = f"{prefix}.{label}"
                    out[key] = out[key] + "\n" + value if key in out else value
    return out


@dataclass(frozen=True)
class Difference:
    instance: int | None  # None: the arm as a whole (instance count)
    key: str
    baseline: str | None  # None: absent on that side
    accelerated: str | None
    allowed_by: str | None  # the pattern that allows it; None: blocking (or ignored noise)
    ignored: bool = False  # session noise (NOISE_ENV)
    detail: str = ""  # what the values stand for, e.g. the shared objects only one maps
    detail_why: Reason | None = None  # `detail` as a Reason (harness.reasons)

    def describe(self, with_instance: bool = True) -> str:
        where = f"instance {self.instance} " if with_instance and self.instance is not None \
            else ""
        what = f"; {self.detail}" if self.detail else ""
        return (f"{where}{self.key} (baseline {_short(self.baseline)}, "
                f"accelerated {_short(self.accelerated)}{what})")

    def describe_why(self, with_instance: bool = True) -> Reason:
        """`describe` as a Reason (harness.reasons), for the report's languages."""
        return Reason("g3.difference", {
            "instance": Reason("g3.instance_prefix", {"n": self.instance})
            if with_instance and self.instance is not None else "",
            "key": self.key, "baseline": _short_why(self.baseline),
            "accelerated": _short_why(self.accelerated),
            "detail": Reason("g3.difference_detail", {
                "detail": self.detail_why or listed([self.detail])}) if self.detail else ""})


def _short(value: str | None) -> str:
    if value is None:
        return "absent"
    text = value.replace("\n", "\\n")
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."


def _short_why(value: str | None) -> Reason | str:
    return Reason("g3.absent") if value is None else _short(value)


@dataclass(frozen=True)
class ArmComparison:
    differences: tuple[Difference, ...]
    instances: int  # instances compared (the smaller arm's count)
    unverified: tuple[int, ...] = ()  # instances whose environ neither arm let us read

    @property
    def blocking(self) -> tuple[Difference, ...]:
        return tuple(d for d in self.differences if d.allowed_by is None and not d.ignored)

    @property
    def allowed(self) -> tuple[Difference, ...]:
        return tuple(d for d in self.differences if d.allowed_by is not None)

    @property
    def ignored(self) -> tuple[Difference, ...]:
        return tuple(d for d in self.differences if d.ignored)

    @property
    def equal(self) -> bool:
        """Nothing blocks and nothing went unchecked: the arms may be compared."""
        return not self.blocking and not self.unverified

    def summary(self, limit: int = 3) -> str:
        """One line for an ERROR message or a log."""
        many = self.instances > 1
        if self.blocking:
            first = sorted(self.blocking, key=lambda d: _rank(d.key))  # what code runs first
            shown = [d.describe(many) for d in first[:limit]]
            more = len(self.blocking) - len(shown)
            return "arms differ in " + "; ".join(shown) + (f"; and {more} more" if more else "")
        if self.unverified:
            return ("arms not verified: the environment of instance(s) "
                    f"{', '.join(map(str, self.unverified))} could not be read (probe with sudo)")
        keys = sorted({d.key for d in self.allowed})
        text = "arms equal" + (f" but for allowed {', '.join(keys)}" if keys else "")
        return text + (f" ({len(self.ignored)} noise differences ignored)" if self.ignored
                       else "")

    def summary_why(self, limit: int = 3) -> Reason:
        """`summary` as a Reason (harness.reasons), for the report's languages."""
        many = self.instances > 1
        if self.blocking:
            first = sorted(self.blocking, key=lambda d: _rank(d.key))
            more = len(self.blocking) - len(first[:limit])
            return Reason("g3.arms_differ", {
                "more": Reason("g3.and_more", {"n": more}) if more else ""},
                tuple(d.describe_why(many) for d in first[:limit]))
        if self.unverified:
            return Reason("g3.arms_unverified",
                          {"instances": ", ".join(map(str, self.unverified))})
        keys = sorted({d.key for d in self.allowed})
        return Reason("g3.arms_equal", {
            "allowed": Reason("g3.but_for_allowed", {"keys": ", ".join(keys)}) if keys else "",
            "ignored": Reason("g3.noise_ignored", {"n": len(self.ignored)})
            if self.ignored else ""})


def _bare(key: str) -> str:
    return key.removeprefix(PROXY + ":")


def _rank(key: str) -> int:
    """Order of a blocking difference in the summary: the code that runs, then the
    variables that select it, then the rest."""
    bare = _bare(key)
    if bare.split(":", 1)[0] in CODE_PREFIXES:
        return 0
    return 1 if bare.startswith("env:") and bare[4:] in INTERPRETER_ENV else 2


def _noise(key: str) -> bool:
    bare = _bare(key)
    return bare.startswith("env:") and bare[4:] in NOISE_ENV


def proxy_facts(facts: Mapping[str, str]) -> dict[str, str]:
    """A declared proxy's own facts, compared between the arms beside the engine's."""
    return {f"{PROXY}:{k}": v for k, v in facts.items()}


Libs = Sequence[frozenset[str]]


def compare_arms(baseline: Sequence[Mapping[str, str]], accelerated: Sequence[Mapping[str, str]],
                 allowed: Sequence[str], libs: tuple[Libs, Libs] | None = None) -> ArmComparison:
    """Instance i against instance i: every key whose value differs, or that one side
    lacks, is a Difference; `allowed` globs (fnmatch, case-sensitive) over the key allow
    it; NOISE_ENV keys are ignored. A different instance count blocks, whatever `allowed`
    says. `libs` (each arm's shared objects per instance) names the files behind a
    `proc:libs` difference."""
    diffs: list[Difference] = []
    if len(baseline) != len(accelerated):
        diffs.append(Difference(None, INSTANCES, str(len(baseline)), str(len(accelerated)),
                                None))
    unverified: list[int] = []
    for i, (b, a) in enumerate(zip(baseline, accelerated, strict=False)):
        if ENV_UNREADABLE in b and ENV_UNREADABLE in a:
            unverified.append(i)
        for key in sorted(b.keys() | a.keys()):
            bv, av = b.get(key), a.get(key)
            if bv == av:
                continue
            ignored = _noise(key)
            pattern = None if ignored else next(
                (p for p in allowed if fnmatch.fnmatchcase(key, p)), None)
            detail, detail_why = "", None
            if key == LIBS and libs is not None and i < min(len(libs[0]), len(libs[1])):
                detail = libs_detail(libs[0][i], libs[1][i])
                detail_why = libs_detail_why(libs[0][i], libs[1][i])
            diffs.append(Difference(i, key, bv, av, pattern, ignored, detail, detail_why))
    return ArmComparison(tuple(diffs), min(len(baseline), len(accelerated)), tuple(unverified))
