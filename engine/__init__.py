"""The reference Qwen3 engine (profile-driven kernel binding)."""
