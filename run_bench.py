#!/usr/bin/env python3
"""Benchmark web frameworks: `python run_bench.py --help`. The work is in bench/."""
import sys

from bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
