"""A local tool: counts words, lines and characters."""
