"""Solvers: how to walk. Each asks the model only through a small protocol."""

SOLVERS = ("lbfgs", "owlqn")


def get_solver(name):
    """The minimise function of solver ``name``."""
    if name in ("lbfgs", "owlqn"):
        from .owlqn import minimize_owlqn
        return minimize_owlqn
    raise ValueError(f"unknown solver {name!r}; choose one of {', '.join(SOLVERS)}")
