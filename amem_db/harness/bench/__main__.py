"""``python -m amem_db.harness.bench worker '{json}'``: one system at one size
in its own process (internal to ``amem-db bench``)."""

import os
import sys

from .run import worker_main

if len(sys.argv) >= 3 and sys.argv[1] == "worker":
    worker_main(sys.argv[2:])
else:
    sys.stderr.write("usage: amem-db bench (this module's `worker` entry is internal)\n")
    sys.stderr.flush()
    os._exit(2)
