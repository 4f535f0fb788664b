"""Telling people: webhooks (signed JSON or Slack) for approvals, pins and budget alerts, kept in
a database outbox and delivered once by whichever replica claims each delivery."""
