"""G3 main gate suite."""
