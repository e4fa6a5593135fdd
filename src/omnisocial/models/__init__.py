"""Model backends (local transformers, OpenAI-compatible HTTP, Gemini, offline baselines)."""
