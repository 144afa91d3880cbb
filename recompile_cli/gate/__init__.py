"""Gates: budget files, the checks of counts against limits and baselines, ``check`` and
``diff``. Pure over ``Report``s, except ``check``, which runs the budget file's targets.
"""
