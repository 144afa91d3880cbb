"""What a run is given: the argument spec (``spec``), jit options (``jit_options``) and strict
YAML reading with line-numbered errors (``yaml_doc``, also used by budget files). No JAX work
happens here except ``materialize``; importing the user's code is ``capture.running.loader``'s.
"""
