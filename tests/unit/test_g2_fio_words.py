"""G2's fio figure says how fio did its I/O (harness/g2/fio.py): `direct: false` went
through the page cache, whose figures can be the host's memory (the demo's ~1 GB/s of
this machine's disk), and the reader must see it in the CLI's words and in both report
languages, as a reason code, never as English inside a parameter."""

from __future__ import annotations

import json

from harness.config.baseline import FioTarget
from harness.g2 import fio
from harness.probes.findmnt import Mount
from harness.probes.mounts import described, described_why
from harness.reasons import from_json
from harness.report import reasons
from harness.report.i18n import translator

MOUNT = Mount(target="/", source="/dev/vda", fstype="ext4")


def _said(direct: bool) -> tuple[str, str, str]:
    target = FioTarget(name="volume", path="/srv/fio", mount="/", direct=direct)
    english, why = fio.measured(969.4, "MB/s", target, described(MOUNT), described_why(MOUNT))
    stored = from_json(json.loads(json.dumps(why.as_json())))  # as the store keeps it
    assert stored == why
    return (english, reasons.say(translator("en"), stored),
            reasons.say(translator("zh"), stored))


def test_buffered_fio_says_page_cache_in_the_cli_and_both_languages() -> None:
    english, en, zh = _said(direct=False)
    assert english == "969 MB/s, buffered (page cache), /dev/vda (ext4) at /"
    assert en == english  # the catalogue says what the harness wrote
    assert "页缓存" in zh and "buffered" not in zh and zh.startswith("969 MB/s")


def test_direct_fio_says_direct_io() -> None:
    english, en, zh = _said(direct=True)
    assert english == "969 MB/s, direct I/O, /dev/vda (ext4) at /"
    assert en == english
    assert "直接读写" in zh and "缓冲" not in zh
