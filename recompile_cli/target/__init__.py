"""Finding what to run: the user's code (``loader``), the argument spec (``spec``) and YAML
reading with line-numbered errors (``yaml_doc``). No JAX work happens here except
``spec.materialize``.
"""
