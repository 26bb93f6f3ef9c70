"""What every tool profile (profiles/<name>/) shares: the hints, the tool decorator, schema trimming, score scales."""
