"""Warm-up plans: which compiles of a run a plan can make again ahead of time (``plan``), and
what a warm-up did not cover (``coverage``).
"""
