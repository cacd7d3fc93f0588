"""Backbones: `openai` (any OpenAI-compatible endpoint) and `scripted` (deterministic, offline)."""
