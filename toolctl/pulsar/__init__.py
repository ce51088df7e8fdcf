"""Apache Pulsar: the TrustGraph wire format, the client, the worker, the embedded broker."""
