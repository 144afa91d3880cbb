"""The user's code as only the running interpreter can tell: the call site and user frame on
the stack (``stack``), where a traced function object comes from (``origins``), a function
value named as the user writes it (``function_names``) and the attributes a library class
branches on in Python (``branches``). No JAX internals.
"""
