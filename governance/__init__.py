"""Tool governance: which tools a principal may see and run, and why not."""
