"""Webhook notifications for approvers: an outbox in the database, delivered by one replica."""
