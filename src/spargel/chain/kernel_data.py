"""Named kernel data of the chain CRFs: the tuples the compiled kernels take, with
names (numba compiles a named tuple like a plain one; ``x.name`` reads the same slot as
``x[i]``).

* :class:`Data` -- a :class:`~spargel.data.dataset.SequenceData` as flat arrays
  (:func:`data_tuple`);
* :class:`Work` -- the per-thread scratch of the batch and prediction kernels of both
  orders (:func:`spargel.chain.crf_kernels.work_buffers`,
  :func:`spargel.chain.crf2_kernels.work_buffers`); the fields a given order does not
  use hold empty arrays;
* :class:`LogWork` -- the scratch of the log-space and decoding kernels;
* :class:`Corrections` -- the position corrections of a sequence (the bigram attributes'
  scores, :mod:`spargel.chain.inference`; :func:`correction_lists`);
* :class:`Aux` -- the first order's padded view of the unigram features
  (:class:`spargel.chain.crf.CRFView`, see :mod:`spargel.chain.crf_kernels`);
* :class:`BigramList` -- a bigram list (:func:`spargel.chain.crf_kernels.compact_bigrams`);
* :class:`Penalty` -- the lazy l1 penalty of one SGD step (:mod:`spargel.chain.sgd_kernels`,
  :mod:`spargel.chain.crf_sgd`, :mod:`spargel.chain.crf2_sgd`);
* :class:`Marks` -- the records of the blocks one SGD step meets (same modules);
* :class:`PhaseWork` -- the marginal scratch of one phase of an SGD sequence step
  (:func:`spargel.chain.crf_sgd.phase_marginals`);
* :class:`PassRows` -- the padded rows of a first-order SGD pass and their marks
  (:mod:`spargel.chain.crf_sgd`);
* :class:`TokenLists` -- the token lists of a padded-rows SGD pass (same module);
* :class:`PassWork` -- the scratch of an SGD pass of either order
  (:func:`spargel.chain.sgd_kernels.work`).

The layout tuple is :class:`spargel.data.feature_space.Space` (``FeatureSpace.as_tuple``).
Block coordinate descent's own tuples (``IndexTables``, ``BlockRows``, ``BigramSlots``,
``BlockWork``, ``SweepControl``) are defined with its kernels in :mod:`spargel.chain.crf_bcd`.
"""

from collections import namedtuple

import numpy as np
from ..data.dataset import is_unit

#: the data set: sequence offsets into the tokens, per token its unigram attributes
#: (CSR: ``uni_ptr``, ``uni_ids``, ``uni_vals``; ``uni_vals`` empty: every value is 1)
#: and bigram / pair attributes (``big_ptr``, ``big_ids``, ``big_vals``), and its label
#: id (-1: unknown)
Data = namedtuple("Data", "seq_ptr uni_ptr uni_ids uni_vals big_ptr big_ids big_vals labels")

#: scratch of one thread. First the fields of the first-order kernels: state scores
#: ``E``, their factors ``psi``, the scaled recursion's ``alpha`` / ``beta`` / ``scale``
#: / ``shift``, ``tmp`` and ``kbuf`` (the exponentials' scratch), the pair marginals
#: ``P`` (None at order 1 without bigram attributes), ``need`` (positions whose pair
#: marginals are needed), ``cacc`` / ``mark`` (the corrections' scratch), the corrections
#: ``corr`` (:class:`Corrections`) and ``nomask`` (an empty mask: plain weights). Then the second order's: its
#: unigram rows ``U``, label marginals ``lm``, the shared pair factors ``eB`` and their
#: counts ``gB``, and ``pcache`` ([attribute, max score] of the factors held in ``eB``).
Work = namedtuple("Work", "E psi alpha beta scale shift tmp kbuf P need cacc mark corr nomask "
                          "U lm eB gB pcache")

#: scratch of the log-space and decoding kernels: forward / backward log messages
#: ``la`` / ``lb``, marginals ``gamma``, a position's transition scores ``fv_t``, the
#: log-sum candidates ``cand`` and the Viterbi back pointers ``back``
LogWork = namedtuple("LogWork", "la lb gamma fv_t cand back")

#: the position corrections of a sequence (:mod:`spargel.chain.inference`): position
#: ``t`` has the entries ``ptr[t]:ptr[t+1]``; entry ``q`` raises the transition factor of
#: the state pair ``(src[q], dst[q])`` by ``factor[q]`` (``Mbase * expm1(score)``), its
#: raw log score by ``score[q]``, and ``pair[q]`` is the pair's index in the structure's
#: list of allowed pairs. A position's first entry may be a sentinel instead
#: (``src = FULL``: its whole matrix follows; ``src = MAT``: ``dst`` names a stored matrix)
Corrections = namedtuple("Corrections", "ptr src dst factor score pair")

#: the padded unigram view (:func:`spargel.chain.crf.token_lists`):
#: ``Lp`` -- the padded label count; ``binary`` -- all attribute values are 1;
#: ``dptr`` / ``drows`` / ``dval`` -- per token its dense rows and their values;
#: ``eptr`` / ``ek`` / ``evals`` -- per token the weight indices of its other attributes
#: and their values (``dval`` / ``evals`` empty when binary); ``Wd`` -- the dense rows'
#: padded weights; ``dnz`` -- whether a dense row has a non-zero weight; ``el`` -- the
#: label of each ``ek`` entry (uint8 up to 256 labels, else int32)
Aux = namedtuple("Aux", "Lp binary dptr drows dval eptr ek evals Wd dnz el")

#: a bigram list: attribute ``a`` contributes the weights ``v[base + e]`` for the label
#: pairs ``pair[e]``, ``e`` in ``ptr[a]:ptr[a+1]``; ``bi`` / ``bj`` -- the pair's labels
#: and ``bc`` -- its correction (empty in a raw list); ``amat`` -- per attribute its
#: stored matrix slot (-1: none; empty in a raw list)
BigramList = namedtuple("BigramList", "ptr pair base v bi bj bc amat")

#: the lazy l1 penalty of an SGD step (:mod:`spargel.core.lazy_l1`): ``aux`` -- per weight
#: its penalty record (not the padded view :class:`Aux`); ``l1w`` -- per-weight l1 factors
#: (empty: uniform); ``l1`` -- the uniform l1 strength; ``us`` / ``up`` -- the penalty
#: accrued per unit of l1 by the l2-scaled / the other weights; ``variant`` -- the
#: penalty variant's code
Penalty = namedtuple("Penalty", "aux l1w l1 us up variant")

#: what an SGD step met: ``umark`` / ``bmark`` -- per unigram / bigram attribute the
#: stamp of the last step that met it; ``tu`` / ``tb`` -- the unigram / bigram attributes
#: met in this step, ``ntu[0]`` / ``ntb[0]`` of them; ``stamp`` -- this step's stamp
Marks = namedtuple("Marks", "umark tu ntu bmark tb ntb stamp")

#: the marginal scratch of one phase of an SGD sequence step (both orders):
#: ``la`` / ``lb`` -- the log-space forward / backward messages;
#: ``gamma`` -- the state marginals when the phase took log space;
#: ``fv_t`` / ``cand`` -- a position's transition scores / the log-sum candidates (log space);
#: ``tcount`` -- the transition counts by list index;
#: ``acc`` -- the backward pass's transition accumulators ``(outer, glob, pos)``
PhaseWork = namedtuple("PhaseWork", "la lb gamma fv_t cand tcount acc")

#: the padded rows of a first-order SGD pass (:mod:`spargel.chain.crf_sgd`) and the marks
#: its step reads:
#: ``umark`` -- per unigram attribute the stamp of the last step that met it (the general pass);
#: ``W`` / ``R`` -- the padded rows' weights / penalty records;
#: ``dmark`` -- per row the stamp of the last step that settled it
PassRows = namedtuple("PassRows", "umark W R dmark")

#: the token lists of a padded-rows SGD pass (:mod:`spargel.chain.crf_sgd`):
#: ``aux`` -- the batch model's padded view (:class:`Aux`) over the pass's rows;
#: ``wmark`` -- per weight the stamp of the last step that settled it
TokenLists = namedtuple("TokenLists", "aux wmark")

#: the scratch of an SGD pass (:mod:`spargel.chain.sgd_kernels`); the first order's
#: fields, then the second order's (None at order 1):
#: ``umark`` / ``bmark`` -- per unigram / bigram attribute the stamp of the last step that met it;
#: ``W`` / ``R`` -- the padded rows' weights / penalty records (no rows at order 2);
#: ``dmark`` -- per row its stamp;
#: ``tu`` / ``tb`` -- the unigram / bigram attributes a step met, ``ntu[0]`` / ``ntb[0]`` of them;
#: ``g`` -- the gradient (``v`` itself for a direct pass); ``T`` -- the transition weights;
#: ``buf`` -- the kernels' :class:`Work`; ``xbuf`` -- the :class:`PhaseWork` (order 2: under PAIR_ONES);
#: ``sw`` / ``partial`` -- sequence weights / partial-label flags (None: none);
#: ``tok`` -- the :class:`TokenLists` of the padded-rows pass (None: the general pass);
#: ``flat`` -- True for the general pass (None: padded rows);
#: ``big`` -- True when the first order's data has bigram attributes (else None);
#: ``logsp`` -- True: the log-space fallback is compiled (None: not);
#: ``trans`` -- the transition structure (order 1: DENSE, order 2: PAIR_ONES), loaded per step;
#: ``lst`` / ``list_k`` -- order 2: the LIST of every transition, the list index of each triple;
#: ``xbuf_list`` -- order 2: the :class:`PhaseWork` under LIST
PassWork = namedtuple("PassWork", "umark W R dmark bmark tu tb ntu ntb g T buf xbuf sw partial tok flat big "
                                  "logsp trans lst list_k xbuf_list")


def correction_lists(n_pos, cap):
    """Empty :class:`Corrections` for sequences of up to ``n_pos`` positions with room
    for ``cap`` entries (``ptr`` of ``n_pos + 1`` zeros: no position has corrections)."""
    return Corrections(np.zeros(n_pos + 1, np.int64), np.zeros(cap, np.int64), np.zeros(cap, np.int64),
                       np.zeros(cap), np.zeros(cap), np.zeros(cap, np.int64))


def data_tuple(data):
    """The :class:`Data` of a :class:`~spargel.data.dataset.SequenceData` (labels all 0
    when it has none; unigram values that are all 1, :func:`~spargel.data.dataset.unit_values`,
    as an empty array: the kernels read 1 without a load)."""
    labels = data.labels if data.labels is not None else np.zeros(data.n_tokens, np.int32)
    uni_vals = np.empty(0) if is_unit(data.uni_vals) else data.uni_vals
    return Data(data.seq_ptr, data.uni_ptr, data.uni_ids, uni_vals,
                data.big_ptr, data.big_ids, data.big_vals, labels)
