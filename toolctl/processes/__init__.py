"""Every background process toolctl starts: one table, one launch, one stop."""
