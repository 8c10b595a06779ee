"""The words every layer speaks: errors, events (in), actions (out), result models, the
transition tables and phases, OAuth token records, namespaced tool names and URLs.
"""
