"""Prompt-based tool calling for models that only produce text (one module per format family)."""
