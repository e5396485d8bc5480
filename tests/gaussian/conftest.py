import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gmrf_helpers import _problems  # noqa: E402,F401  (the "problems" fixture)

# One BLAS thread for these small problems: multi-threaded OpenBLAS on tiny
# matrices only adds synchronisation, and on a busy machine it can turn
# milliseconds into seconds.
try:
    import numpy  # noqa: F401  (load the BLAS libraries before limiting them)
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits

    _limits = threadpool_limits(limits=1, user_api="blas")
except Exception:  # threadpoolctl is optional
    _limits = None
