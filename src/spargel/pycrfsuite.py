"""python-crfsuite's API on spargel: code written for python-crfsuite runs with its
import changed (``from spargel import pycrfsuite``, or ``import spargel.pycrfsuite as
pycrfsuite``), without python-crfsuite or CRFsuite installed.

* :class:`Trainer` (and :class:`BaseTrainer`): ``append``, ``select``, ``set_params``,
  ``get_params``, ``params``, ``set``, ``get``, ``help``, ``clear``, ``train(model,
  holdout=-1)``, ``message`` and the ``on_*`` callbacks fed with CRFsuite's log,
  ``logparser``; CRFsuite's trainers (lbfgs, l2sgd, ap, pa, arow) with CRFsuite's
  parameter names and defaults, trained by spargel's solvers;
* :class:`Tagger`: ``open`` (a context manager), ``open_inmemory``, ``close``, ``set``,
  ``tag``, ``probability``, ``marginal``, ``labels``, ``info`` (a :class:`ParsedDump`),
  ``dump``;
* :class:`ItemSequence`, :class:`CRFSuiteError`, :class:`TrainLogParser`,
  ``CRFSUITE_VERSION`` (the CRFsuite release whose files and trainers these follow) and
  ``__version__`` (the python-crfsuite release whose API this is).

Model files are CRFsuite's: a file written by either library is read by the other's
``Tagger``. See ``docs/migration.md``, "From python-crfsuite".
"""

from .chain.crfsuite_compat import ParsedDump, Tagger
from .chain.crfsuite_log import LabelScore, TrainLogParser
from .chain.crfsuite_trainer import CRFSUITE_VERSION, BaseTrainer, CRFSuiteError, ItemSequence, Trainer

#: the python-crfsuite release whose API this module offers
__version__ = "0.9.12"

__all__ = ["BaseTrainer", "Trainer", "Tagger", "ItemSequence", "CRFSuiteError", "ParsedDump", "TrainLogParser",
           "LabelScore", "CRFSUITE_VERSION"]
