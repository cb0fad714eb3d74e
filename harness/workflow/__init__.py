"""Workflow helpers beside the runner and the campaign (the demo's site parts)."""
