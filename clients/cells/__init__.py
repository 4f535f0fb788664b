"""The matrix's cells, one module per client."""
