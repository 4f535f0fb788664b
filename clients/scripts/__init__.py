"""Programs the matrix runs with the clients' own Python (.clients/venv), one per client: each
takes its case as its argument and the gateway from GATEWAY_URL, GATEWAY_KEY and MODEL."""
