"""Report templates, CSS and message catalogs (shipped as package data of harness.reports)."""
