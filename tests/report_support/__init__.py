"""Test helpers for the report: fill a temp store with realistic rows through the store API."""
