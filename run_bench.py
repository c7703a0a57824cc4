#!/usr/bin/env python3
"""Benchmark web frameworks: `python run_bench.py --help`. The work is in bench/."""
import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["doctor"]:
        # before `make setup` has made the virtualenv: the doctor needs the standard
        # library only, so any Python >= 3.11 runs it
        from bench.setup.doctor import main as doctor
        sys.exit(doctor(sys.argv[2:]))
    from bench.cli import main
    sys.exit(main())
