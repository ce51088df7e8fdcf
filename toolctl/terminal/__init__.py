"""What a terminal shows: results, tables, definitions, errors, warnings and progress; help
(``help``: plain, with examples) and usage errors (``usage``) in toolctl's one style.

The front door's presentation, beside ``cli/`` rather than in it: a command parses its
options, makes one use-case call and hands what comes back to a function here. Nothing
below the front door imports this package; the library reports through the Sink and
Reporter interfaces (``runners.base``, ``reporting``), which ``render`` implements for a
terminal.
"""
