"""A package's public names imported on first use (PEP 562's module ``__getattr__``).

``import spargel`` and ``import spargel.gaussian`` stay fast: a name such as
``spargel.CRF`` imports its module (and so its compiled kernels) only when it is first
read, and is then kept in the package's namespace.
"""

from importlib import import_module


def lazy_exports(namespace, names, submodules=()):
    """The module-level ``__getattr__`` and ``__dir__`` (its ``__all__``) of the package
    whose globals are ``namespace``: ``names`` maps each public name to the module that
    defines it, ``submodules`` are the package's modules reachable as attributes."""
    package = namespace["__name__"]

    def __getattr__(name):
        if name in submodules:
            value = import_module(f"{package}.{name}")
        else:
            module = names.get(name)
            if module is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def __dir__():
        return namespace["__all__"]

    return __getattr__, __dir__
