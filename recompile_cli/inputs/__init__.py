"""What a run is given, validated before any JAX work: the argument spec (``spec``), jit options
(``jit_options``), the field errors both raise (``fields``) and strict YAML reading with
line-numbered errors (``yaml_doc``, also used by budget files). Only ``materialize`` (a spec's
values made real) imports JAX; importing the user's code is ``capture.running.loader``'s.
"""
