"""What agents run: the MCP server (``amem-db mcp``, amem_db/agents/mcp_server.py).
The framework retrievers are in amem_db/integrations/ (optional extras)."""
