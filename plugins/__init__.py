"""Sample tool implementations that the sample registry in ``registry/`` points at."""
