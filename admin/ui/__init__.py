"""The admin web UI at ``/admin``: server-rendered pages over the admin API's queries."""
