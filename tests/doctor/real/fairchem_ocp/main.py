"""For backwards compatibility"""

from __future__ import annotations

if __name__ == "__main__":
    from fairchem.core._cli import main

    main()
