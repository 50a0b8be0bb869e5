"""The replay engine: sources -> framer -> workers (decoder + books) -> merge -> Arrow tables."""
