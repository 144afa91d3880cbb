"""JAX's persistent compilation cache: why two runs' keys differ (``keys``) and a run's hits,
misses and seconds saved (``outcomes``).
"""
