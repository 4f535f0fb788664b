"""Who calls and what they may spend: API keys and the principals they make, teams, usage and
its pricing and rollups, rate limits and budgets, retention of usage and audit rows.

The domain the HTTP edge (gateway/) serves; it knows nothing of HTTP."""
