"""EngineSpec: JSON and `gate sim` argv round trips (what `restart` relies on), and user
errors as one line naming the option."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from harness.errors import UsageError
from harness.sim.options import engine_options, spec_from_context
from harness.sim.spec import EngineSpec, FaultSpec

FULL = EngineSpec(
    profile="r2-moe480b", host="10.0.0.2", port=8123, external_tier=True, speed=37.5, tp=4,
    instance=1, tier_dir=Path("/tmp/t"), tier_reset=True, diskstats=Path("/tmp/d"),
    diskstats_device="nvme3n1", cache_dir=Path("/tmp/c"), tier_read_gbps=7.5,
    model="other/model", seed=9, stream_interval=4,
    faults=FaultSpec(error_rate=0.1, stall_rate=0.05, stall_s=2.0, crash_after=7,
                     slow_start_s=3.0))


@click.command()
@engine_options
@click.pass_context
def _probe(ctx: click.Context) -> None:
    click.echo(spec_from_context(ctx).dumps())


def _parse(argv: list[str]) -> EngineSpec:
    result = CliRunner().invoke(_probe, argv, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    import json

    return EngineSpec.from_json(json.loads(result.output))


def test_json_round_trip() -> None:
    import json

    assert EngineSpec.from_json(json.loads(FULL.dumps())) == FULL


def test_argv_round_trip() -> None:
    assert _parse(FULL.to_argv()) == FULL
    assert _parse([]) == EngineSpec()
    assert _parse(EngineSpec().to_argv()) == EngineSpec()


def test_restart_never_resets_the_tier() -> None:
    assert FULL.for_restart().tier_reset is False
    assert FULL.for_restart().tier_dir == FULL.tier_dir


@pytest.mark.parametrize(("spec", "key"), [
    (EngineSpec(speed=0), "--speed"),
    (EngineSpec(tp=0), "--tp"),
    (EngineSpec(profile="nope"), "--profile"),
    (EngineSpec(faults=FaultSpec(error_rate=1.5)), "--error-rate"),
    (EngineSpec(stream_interval=0), "--stream-interval"),
])
def test_bad_values_name_the_option(spec: EngineSpec, key: str) -> None:
    with pytest.raises(UsageError) as err:
        spec.check()
    assert err.value.key == key
    assert err.value.exit_code == 4


def test_tier_reset_needs_the_tier() -> None:
    with pytest.raises(UsageError, match="--external-tier on"):
        CliRunner().invoke(_probe, ["--tier-reset"], catch_exceptions=False)


def test_url_is_connectable() -> None:
    assert EngineSpec(host="0.0.0.0", port=9).url() == "http://127.0.0.1:9"
    assert EngineSpec(host="::1", port=9).url() == "http://[::1]:9"
