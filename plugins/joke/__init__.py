"""The seed's joke service, as a TrustGraph-style tool service hosted by `toolctl worker`."""
