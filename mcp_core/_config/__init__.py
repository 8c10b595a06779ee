"""What a server is and how to reach it: ``Spec`` (validated, redacted), ``.mcp.json`` files,
and what the machine is told about its OAuth client.
"""
