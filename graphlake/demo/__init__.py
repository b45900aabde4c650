"""The embedded demo corpus: generated deterministically by code, ingested by `graphlake demo`."""
