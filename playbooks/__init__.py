"""gate's Ansible playbooks, shipped as package data (harness.playbooks)."""
