"""Site configuration: gate.yaml (pydantic) and the Ansible inventory."""

from harness.config.loader import LoadedConfig, load_config, parse_config
from harness.config.models import SiteConfig

__all__ = ["LoadedConfig", "SiteConfig", "load_config", "parse_config"]
