"""Which launch style orch reads in each public script of the doctor's corpus (tests/doctor/real/), and
whether orch would start it as written: the table docs/bring-your-own-script.md quotes.

Run: .venv/bin/python bench/launch_styles.py [--scripts]
Each entry file is checked as ``orch submit`` checks it (``orchestrator.doctor.gate``'s reading: the doctor's
findings, the style the script's facts decide, the findings the style answers); a script is "refused" when an error is
left (the submit would stop before the queue), on one node and on two. ``--scripts`` lists every script
with its style and reason.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from orchestrator import launchstyles  # noqa: E402
from orchestrator.doctor import launchstyle  # noqa: E402
from orchestrator.doctor.check import check_file  # noqa: E402
from orchestrator.doctor.findings import DoctorInputError, DoctorSkipped  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "doctor"))
from real_corpus import REAL, require_code  # noqa: E402
from real_corpus import truth as read_truth  # noqa: E402


def main(argv: list[str]) -> int:
    require_code()
    truth = read_truth()
    styles: Counter[str] = Counter()
    refused: dict[int, Counter[str]] = {1: Counter(), 2: Counter()}
    rows = []
    for name, entry in sorted(truth.items()):
        path = REAL / name / entry["entry"]
        try:
            found = check_file(path)
        except (DoctorInputError, DoctorSkipped) as exc:
            rows.append((name, "unread", str(exc)[:60]))
            styles["unread"] += 1
            continue
        launch = launchstyles.detect(launchstyles.read(path))
        styles[launch.style] += 1
        for nodes, counts in refused.items():
            if any(f.severity == "error" for f in launchstyle.answered(launch, found, nodes)):
                counts[launch.style] += 1
        rows.append((name, launch.style, launch.why))
    if "--scripts" in argv:
        for name, style, why in rows:
            print(f"{name:<40} {style:<15} {why}")
        print()
    total = sum(styles.values())
    print(f"{'style':<15} {'scripts':>7} {'refused (1 node)':>16} {'refused (2 nodes)':>17}")
    for style, count in styles.most_common():
        print(f"{style:<15} {count:>7} {refused[1][style]:>16} {refused[2][style]:>17}")
    print(f"{'all':<15} {total:>7} {sum(refused[1].values()):>16} {sum(refused[2].values()):>17}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
