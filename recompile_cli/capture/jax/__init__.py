"""The JAX-internals layer: the only code that imports ``jax._src``."""
