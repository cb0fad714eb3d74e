"""EngineSpec: JSON and `gate sim` argv round trips (what `restart` relies on), and user
errors as one line naming the option."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from harness.errors import UsageError
from harness.sim.options import engine_options, spec_from_context
from harness.sim.spec import NOT_REPORTED, EngineSpec, FaultSpec

FULL = EngineSpec(
    profile="r2-moe480b", host="10.0.0.2", port=8123, external_tier=True, speed=37.5, tp=4,
    instance=1, tier_dir=Path("/tmp/t"), tier_reset=True, diskstats=Path("/tmp/d"),
    diskstats_device="nvme3n1", kv_diskstats=Path("/tmp/k"), kv_dev="259:4",
    storage_host_lies=True, cache_dir=Path("/tmp/c"), tier_read_gbps=7.5,
    model="other/model", seed=9, stream_interval=4, eos_rate=0.25,
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
    (EngineSpec(eos_rate=1.5), "--eos-rate"),
    (EngineSpec(eos_rate=-0.1), "--eos-rate"),
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


def test_eos_rate_on_the_command_line() -> None:
    assert _parse(["--eos-rate", "0.3"]).eos_rate == 0.3
    assert "--eos-rate" not in EngineSpec().to_argv()  # a default spec's argv is as before
    assert EngineSpec.from_json({"port": 1}).eos_rate == 0.0  # a state dir from before


def test_reported_config_has_every_parameter_that_changes_behaviour() -> None:
    """A new EngineSpec / FaultSpec field is reported, or explicitly left out."""
    config = FULL.reported_config()
    expected = ({f.name for f in fields(EngineSpec)} - NOT_REPORTED - {"faults"}
                | {f.name for f in fields(FaultSpec)})
    assert set(config) == expected
    # a storage host that lies is the attack G3 must catch: never the engine's to report
    assert {"host", "port", "tier_dir", "tier_reset", "diskstats", "cache_dir",
            "kv_diskstats", "kv_dev", "storage_host_lies"} == NOT_REPORTED
    assert config["eos_rate"] == 0.25 and config["error_rate"] == 0.1
    assert config["crash_after"] == 7 and config["model"] == "other/model"
    assert EngineSpec(profile="r2-moe480b").reported_config()["tp"] == 8  # resolved


def test_reported_config_shows_any_difference_but_the_arms_own_state() -> None:
    base = EngineSpec(speed=30.0, tp=8, seed=4)
    same = replace(base, host="0.0.0.0", port=8001, tier_dir=Path("/t"), cache_dir=Path("/c"),
                   diskstats=Path("/d"))
    assert same.reported_config() == base.reported_config()
    for other in (replace(base, speed=21.9), replace(base, seed=5), replace(base, tp=4),
                  replace(base, stream_interval=8), replace(base, eos_rate=0.1),
                  replace(base, tier_read_gbps=3.0), replace(base, model="x"),
                  replace(base, profile="null"), replace(base, diskstats_device="sda"),
                  replace(base, faults=FaultSpec(stall_s=1.0)),
                  replace(base, faults=FaultSpec(slow_start_s=2.0))):
        diff = {k for k, v in other.reported_config().items()
                if base.reported_config()[k] != v}
        assert len(diff) == 1, other
    acc = replace(base, external_tier=True)
    assert {k for k, v in acc.reported_config().items()
            if base.reported_config()[k] != v} == {"external_tier"}
