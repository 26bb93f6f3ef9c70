"""The one ingest pipeline (pipeline: acquired document -> docling -> chunker -> embeddings -> gateway), the
ways a document is acquired (acquire; the fetchers and path rules are in ../sources), and the notes
collection the ingestion-index CLI keeps (notes)."""
