"""Multi-process jobs: per-process reports merged, where processes diverge, why a job stopped."""
