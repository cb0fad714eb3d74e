"""The values `gate init`'s template writes where a default says nothing useful (the keys a
site fills in, arms and layouts), and those of the example site beside hosts.ini: data,
kept apart from harness/config/template.py's writer so that stays short."""

from __future__ import annotations

# Values a site fills in, and the sections without a useful default, as YAML lines.
EXAMPLES: dict[str, list[str]] = {
    "gates.g3.evidence.devices": ["[nvme1n1]"],
    "gates.g3.evidence.kv_volume": ["{path: /mnt/fx100/kv, mount: /mnt/fx100}"],
    "site.name": ["acme-sh-dc2"],
    "site.customer": ["ACME"],
    "site.vendor": ["FlashCo"],
    "campaign.name": ["fx100-2026q4"],
    "model.name": ["Qwen/Qwen2.5-32B-Instruct"],
    "arms": [
        "# Each action runs a playbook (shipped: serve.yml; its header lists the vars it takes)",
        "# or a command. serve.yml's process mode runs `command` in the background on each",
        "# instance's host, tracked by `pidfile`; stop and status need mode: process too.",
        "# {layout} {instance} {port} {tp} {host} {address} {url} {arm} are filled in per",
        "# instance; a literal brace is doubled ({{ }}). Fill in your engine's path and flags.",
        "baseline:                    # no accelerator: the engine recomputes",
        "  start:",
        "    playbook: serve.yml",
        "    vars:",
        "      action: start",
        "      name: vllm-{layout}-{instance}",
        "      mode: process",
        "      command: [/opt/vllm/bin/vllm, serve, Qwen/Qwen2.5-32B-Instruct, --port, \"{port}\",",
        "                --tensor-parallel-size, \"{tp}\"]",
        "      pidfile: /var/tmp/gate/vllm-{layout}-{instance}.pid",
        "      log: /var/log/vllm/{layout}-{instance}.log",
        "      health_url: http://127.0.0.1:{port}/health",
        "  stop:",
        "    playbook: serve.yml",
        "    vars: {action: stop, name: \"vllm-{layout}-{instance}\", mode: process,",
        "           pidfile: \"/var/tmp/gate/vllm-{layout}-{instance}.pid\"}",
        "  restart:                    # a cold restart: the same command again",
        "    playbook: serve.yml",
        "    vars:",
        "      action: restart",
        "      name: vllm-{layout}-{instance}",
        "      mode: process",
        "      command: [/opt/vllm/bin/vllm, serve, Qwen/Qwen2.5-32B-Instruct, --port, \"{port}\",",
        "                --tensor-parallel-size, \"{tp}\"]",
        "      pidfile: /var/tmp/gate/vllm-{layout}-{instance}.pid",
        "      log: /var/log/vllm/{layout}-{instance}.log",
        "      health_url: http://127.0.0.1:{port}/health",
        "  # The engine's log on each instance's host, fetched after every stop into the",
        "  # evidence pack (the last MiB of what is new; {layout} {instance} {port} filled):",
        "  logs: [\"/var/log/vllm/{layout}-{instance}.log\"]",
        "accelerated:                 # KV cache on the accelerator's NVMe-oF tier (LMCache)",
        "  start:",
        "    playbook: serve.yml",
        "    vars:",
        "      action: start",
        "      name: vllm-{layout}-{instance}",
        "      mode: process",
        "      command: [/opt/vllm/bin/vllm, serve, Qwen/Qwen2.5-32B-Instruct, --port, \"{port}\",",
        "                --tensor-parallel-size, \"{tp}\", --kv-transfer-config,",
        "                \'{{\"kv_connector\":\"LMCacheConnectorV1\",\"kv_role\":\"kv_both\"}}\']",
        "      env: {LMCACHE_CONFIG_FILE: /etc/lmcache/fx100.yaml}",
        "      pidfile: /var/tmp/gate/vllm-{layout}-{instance}.pid",
        "      log: /var/log/vllm/{layout}-{instance}.log",
        "      health_url: http://127.0.0.1:{port}/health",
        "  stop:",
        "    playbook: serve.yml",
        "    vars: {action: stop, name: \"vllm-{layout}-{instance}\", mode: process,",
        "           pidfile: \"/var/tmp/gate/vllm-{layout}-{instance}.pid\"}",
        "  restart:",
        "    playbook: serve.yml",
        "    vars:",
        "      action: restart",
        "      name: vllm-{layout}-{instance}",
        "      mode: process",
        "      command: [/opt/vllm/bin/vllm, serve, Qwen/Qwen2.5-32B-Instruct, --port, \"{port}\",",
        "                --tensor-parallel-size, \"{tp}\", --kv-transfer-config,",
        "                \'{{\"kv_connector\":\"LMCacheConnectorV1\",\"kv_role\":\"kv_both\"}}\']",
        "      env: {LMCACHE_CONFIG_FILE: /etc/lmcache/fx100.yaml}",
        "      pidfile: /var/tmp/gate/vllm-{layout}-{instance}.pid",
        "      log: /var/log/vllm/{layout}-{instance}.log",
        "      health_url: http://127.0.0.1:{port}/health",
        "  # The only differences G3 accepts between the arms' running engines (globs over",
        "  # argv / env / what the server reports; `gate run G3` names any other). Outside",
        "  # the accelerator's documented knobs a pattern needs a reviewer's sign-off:",
        "  differs_by: [\"argv:--kv-transfer-config\", \"env:LMCACHE_*\"]",
        "  logs: [\"/var/log/vllm/{layout}-{instance}.log\"]",
    ],
    "gates.g2.gdsio": ["null  # e.g. {path: /mnt/fx100/gate-test, read_gib_s: 12.0, size: 4G, "
                       "io_size: 1M, threads: 4, seconds: 30, gpu: 0}"],
    "layouts": [
        "- {name: TP8,   tp: 8, instances: [{host: gpu1, port: 8000}]}",
        "- {name: TP4x2, tp: 4, instances: [{host: gpu1, port: 8000}, {host: gpu1, port: 8001}]}",
    ],
}


# examples/site/: the realistic site of hosts.ini (two 8-GPU nodes, an NVMe-oF target, a
# load client, a bastion), written from the same template with these values on top.
EXAMPLE_SITE: dict[str, list[str]] = {
    "site.location": ["Shanghai DC2, hall 3"],
    "gates.g1.bom": [
        "gpu:",
        "  gpu:  {model: H100 80GB HBM3, count: 8, min_driver: \"550.54\", min_cuda: \"12.4\"}",
        "  nvme: {model: PM1743, count: 4, min_capacity_gb: 7680, firmware: GDC7502Q}",
        "  nic:  {model: MT4129, count: 8, min_rate_gbps: 400}",
        "  volume: {nqn: \"nqn.2024-01.com.flashco:fx100\", transport: tcp, min_paths: 2}",
        "  os: {os: \"Ubuntu 22.04\", kernel: \"5.15.\"}",
        "  software: {python: /opt/vllm/bin/python, packages: {vllm: \"0.25.1\", "
        "lmcache: \"0.3.9\"}}",
        "storage:",
        "  nic: {model: mlx5_core, count: 2, interfaces: [ens1f0, ens1f1], "
        "min_rate_gbps: 100}",
    ],
    "gates.g1.gdscheck": ["/usr/local/cuda/gds/tools/gdscheck"],
    "gates.g2.fio": [
        "- name: local-nvme",
        "  group: gpu",
        "  path: /mnt/nvme0/gate-fio",
        "  spec: {seq_read_mbps: 6500, seq_write_mbps: 3500, rand_read_iops: 1000000, "
        "lat_qd1_p99_us: 120}",
        "- name: fx100",
        "  group: gpu",
        "  path: /mnt/fx100/gate-fio",
        "  spec: {seq_read_mbps: 12000, seq_write_mbps: 6000, rand_read_iops: 1500000, "
        "lat_qd1_p99_us: 200}",
    ],
    "gates.g2.gdscheck": ["/usr/local/cuda/gds/tools/gdscheck"],
    "plan.ttft_p50": ["2.0"],
    "plan.volume": ["fx100"],
    "report.lang": ["zh"],
}
EXAMPLE_HEADER = """\
# examples/site/gate.yaml: the example site of hosts.ini beside it. Generated, not
# hand-written: `python scripts/example_site.py` writes it from `gate init`'s template
# (harness/config/template.py, EXAMPLE_SITE), and a test fails when the two differ.
"""
