"""What a traced call's arguments look like, read from JAX's objects: the signature of each
trace (``signatures``), Python scalars among its leaves (``scalars``), pytree structures
(``pytrees``), a library wrapper's view of its arguments (``wrapped``), values compared as JAX
compares them (``equality``), what tells apart static values that print alike (``telling``)
and the calls JAX refused (``refusals``).
"""
