"""Everything under ``/v1/admin`` (the JSON API) and ``/admin`` (the web UI)."""
