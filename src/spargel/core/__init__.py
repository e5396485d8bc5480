"""The core every model family stands on, and which knows no family: the model protocol
and factory, penalties and lazily applied l1, the compiled-kernel decorators and their
cache, parameters of estimators, model files, safe output files, limits and threads.
"""
