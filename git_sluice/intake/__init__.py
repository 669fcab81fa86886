"""Intake: one round of one branch (list, readings, one GraphQL query) and the queue it keeps."""
