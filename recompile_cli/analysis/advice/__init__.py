"""Advice: which fix applies to a re-compilation, its text, and the compiles it would save."""
