"""Admin sign-in with OpenID Connect: the company's identity provider names the person and their
groups, and config maps groups to gateway roles."""
