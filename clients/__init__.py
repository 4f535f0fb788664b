"""The client matrix: the tools product teams run, unchanged, through the gateway (`make clients`,
docs/clients.md). Outside the default test run: it installs the clients from the registries."""
