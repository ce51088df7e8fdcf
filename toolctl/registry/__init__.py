"""The registry: the search path (loader), the first-wins index (index), writes (writer)."""
