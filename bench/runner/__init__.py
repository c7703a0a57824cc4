"""One run: the interleaved schedule of samples (run.py), each measured by measure.py."""
from bench.runner.run import NoMaximum, Run

__all__ = ["NoMaximum", "Run"]
