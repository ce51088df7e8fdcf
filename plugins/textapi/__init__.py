"""A small HTTP text service with /health, started on demand by toolctl."""
