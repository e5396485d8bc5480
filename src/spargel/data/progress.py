"""A throttled progress line for reading and feature extraction.

>>> import io
>>> out = io.StringIO()
>>> p = ReadProgress("reading", stream=out, interval=0.0)
>>> p.update(10, 250)
>>> out.getvalue().startswith("reading: 10 sequences, 250 tokens")
True
"""

import sys
import time

#: seconds between two progress lines
INTERVAL = 2.0


class ReadProgress:
    """Counts sequences, tokens and (when known) bytes, and writes a line to ``stream``
    (standard error by default) at most every ``interval`` seconds: what is done and the
    rate (bytes per second when the size of the input is known, else sequences per
    second). ``update`` takes the running totals; it costs a clock read."""

    __slots__ = ("prefix", "total_bytes", "stream", "interval", "t0", "next_at", "lines")

    def __init__(self, prefix, total_bytes=None, stream=None, interval=None):
        self.prefix = prefix
        self.total_bytes = total_bytes
        self.stream = stream
        self.interval = INTERVAL if interval is None else interval
        self.t0 = time.perf_counter()
        self.next_at = self.t0 + self.interval
        self.lines = 0

    def update(self, n_seq, n_tok, n_bytes=None):
        now = time.perf_counter()
        if now < self.next_at:
            return
        self.next_at = now + self.interval
        self.write(n_seq, n_tok, n_bytes, now)

    def write(self, n_seq, n_tok, n_bytes=None, now=None):
        now = time.perf_counter() if now is None else now
        dt = max(now - self.t0, 1e-9)
        parts = [f"{n_seq} sequences, {n_tok} tokens"]
        if n_bytes is not None:
            done = f"{n_bytes / 1e6:.1f} MB"
            if self.total_bytes:
                done += f" of {self.total_bytes / 1e6:.1f} MB ({100 * n_bytes / self.total_bytes:.0f}%)"
            parts.append(done)
            parts.append(f"{n_bytes / 1e6 / dt:.2f} MB/s")
        else:
            parts.append(f"{n_seq / dt:.0f} sequences/s")
        parts.append(f"{dt:.1f}s")
        stream = sys.stderr if self.stream is None else self.stream
        print(f"{self.prefix}: " + ", ".join(parts), file=stream, flush=True)
        self.lines += 1


def counted(X, progress):
    """Yield the sequences of ``X`` unchanged, reporting their number and tokens."""
    n_seq = n_tok = 0
    for seq in X:
        n_seq += 1
        try:
            n_tok += len(getattr(seq, "columns", seq))
        except TypeError:
            pass
        progress.update(n_seq, n_tok)
        yield seq
    if progress.lines:
        progress.write(n_seq, n_tok)
