"""Authorization: OAuth 2.1 as MCP uses it, wrapped around the HTTP transport (``layer``), and
its pure building blocks (discovery ``metadata``, client identity ``clients``, ``oauth``).
"""
