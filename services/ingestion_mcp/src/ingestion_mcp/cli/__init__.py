"""`ingestion-index`: the command line (main), what it does to a folder of notes (index), what it shows
(output)."""
