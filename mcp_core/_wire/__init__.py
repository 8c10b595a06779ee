"""Encodings without meaning: JSON, JSON-RPC 2.0 message shapes, newline-delimited framing
(stdio) and Server-Sent Events.
"""
