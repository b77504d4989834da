"""Helpers every layer of the package may use: bounds, extras, redaction, public names,
background writers, the PostgreSQL settings and the local server thread."""
