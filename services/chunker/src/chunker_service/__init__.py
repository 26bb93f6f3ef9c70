"""chunker-service: text -> token windows of the embedding model's own tokenizer."""

__version__ = "0.1.0"
