"""The first-wins index over the search path, cached in SQLite: ``Registry`` reads it.

Building the index parses every file and runs the cross-definition lint; the result goes
to ``$XDG_CACHE_HOME/toolctl/registry-<digest>.sqlite3`` (one per search path) so that a
lookup in a registry of 100,000 tools costs about what it does in one of ten. When files
change, only they are re-indexed. The modules, each importing only those after it:

* ``reader``: ``Registry`` (lookups, winners, findings) and freshness: which stats a
  lookup makes before it trusts the cache, and what it rebuilds when it cannot
* ``reindex``: the files whose stat changed, re-indexed on a copy of the cache
* ``build``: a cold build, and the rows a build and a re-index write
* ``parsing``: registry files to rows, in a process pool when there are many
* ``database``: the cache file: where it lives, its tables, opening and publishing it

A lookup (``toolctl run``) loads ``reader`` and ``database`` only.
"""

from toolctl.registry.index.database import cache_path
from toolctl.registry.index.reader import Registry

__all__ = ["Registry", "cache_path"]
