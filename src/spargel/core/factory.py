"""The one place estimators get their models from.

``make_model(kind, **arguments)`` builds a model of the protocol
(:mod:`spargel.core.protocol`) by name, so a new kind of model -- a second-order
chain, a model whose data lives on several machines -- slots in by registering a
constructor here, without touching solvers or estimators.

>>> sorted(MODELS)[:3]
['crf', 'crf2', 'loglinear']
"""

from importlib import import_module

# kind -> (module, class)
MODELS = {
    "crf": ("spargel.chain.crf", "ChainCRF"),
    "crf2": ("spargel.chain.crf2", "ChainCRF2"),
    "loglinear": ("spargel.loglinear.model", "FlatLogLinear"),
    "sharded": ("spargel.core.sharded", "ShardedModel"),
}


def register(kind, module, name):
    """Make ``make_model(kind, ...)`` build ``module.name(...)``."""
    MODELS[kind] = (module, name)


def make_model(kind, *args, **kwargs):
    """A model of the given kind (see :data:`MODELS`)."""
    try:
        module, name = MODELS[kind]
    except KeyError:
        raise ValueError(f"unknown model kind {kind!r}; known: {', '.join(sorted(MODELS))}") from None
    return getattr(import_module(module), name)(*args, **kwargs)
