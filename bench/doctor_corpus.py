"""orch doctor on the real corpus (tests/doctor/real/): precision, error precision, recall and the per-code
table that docs/doctor.md ("Judged on real code") shows.

Run: .venv/bin/python bench/doctor_corpus.py [--findings] [--default] [--heldout | --tuned | --set N] [SCRIPT ...]
``--default`` scores what ``orch doctor`` shows without ``--all`` (its possible findings left out).
``--findings`` lists every finding with its verdict (TRUE/FALSE) and every missed pitfall first; SCRIPT
names folders of tests/doctor/real/ to score only those; ``--heldout`` scores only the scripts judged after
the doctor was tuned (``heldout: true`` in truth.yaml), ``--tuned`` only the others. The table ends with one
figures line per subset.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "doctor"))

from real_corpus import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
