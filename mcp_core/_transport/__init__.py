"""Connections: the stdio and HTTP transports, the state every layer shares (a connection, a
piece of caller work), protocol eras and their handshakes, reconnect jitter, and the pure
pieces of each transport (stdio environment and stderr, HTTP headers and statuses).
"""
