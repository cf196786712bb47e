"""How sure a finding is: ``certain``, ``likely`` or ``possible``, from how direct its evidence is.

- **certain**: read from the code itself, with nothing guessed: an error (the severity policy makes an error
  only of what the script shows) unless its rank test is a name, and the warnings whose pattern is literal (a
  hard-coded address, a spawn call, a context manager left as a statement, an init failure caught and let go).
- **likely**: the pattern is in the code's data flow, but one link is inferred (a helper module's code, a
  flag's branch, a sampler's or a save's role, a rank traced through assignments, a rank test read from a name
  alone: ``Ranks.named_only``).
- **possible**: the evidence is a name's meaning or the absence of something the doctor may not see (a
  checkpoint told by its name alone, a device never bound in what could be read), or a context out of sight (a
  spawn asked for by a count of default 1, a world of spawn indexes, logging another module sets up).

``orch doctor`` shows certain and likely findings; ``orch doctor --all`` shows the possible ones too. The
gate before ``orch submit``/``orch run`` never refuses on a possible finding.
"""

from __future__ import annotations

from typing import Literal

Confidence = Literal["certain", "likely", "possible"]
CONFIDENCES: tuple[Confidence, ...] = ("certain", "likely", "possible")

# A warning's confidence when its rule says nothing more precise (an error is always certain).
_WARNING: dict[str, Confidence] = {
    "DDP008": "certain",  # an address, port or rank written in the code
    "DDP012": "certain",  # a device context manager as a bare statement
    "DDP014": "certain",  # a spawn call with no launcher check around it
    "DDP019": "certain",  # init_process_group in a try whose handler lets it go
}


def default_confidence(code: str, severity: str) -> Confidence:
    """The confidence of a finding of ``code`` at ``severity`` when its rule gives none."""
    if severity == "error":
        return "certain"
    return _WARNING.get(code, "likely")


def at_most(confidence: Confidence, ceiling: Confidence) -> Confidence:
    """The less sure of the two (a finding in a helper module is at most ``likely``)."""
    return max(confidence, ceiling, key=CONFIDENCES.index)


def shown(confidence: Confidence, show_all: bool) -> bool:
    """Whether the default output (certain, likely) or ``--all`` (every finding) shows it."""
    return show_all or confidence != "possible"
