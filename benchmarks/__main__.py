"""`python -m benchmarks`: the benchmark suite (see benchmarks/run.py)."""

import sys

from benchmarks.run import main

sys.exit(main())
