"""The multi-host check (``--check-hosts``) while a job runs: which process of a
``jax.distributed`` job this is (``process``) and the exchange, at each compile, that tells
whether every process compiled the same program (``host_check``). Their analysis is
``analysis.hosts``.
"""
