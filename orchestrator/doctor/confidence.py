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

A rule's own reading is then held to what it was measured to be worth: where a code's warnings were right at most
half the time on code nobody here had seen (``MEASURED_WEAK``), they are at most possible there, but for a variant of
the code measured sound on its own (``SOUND_VARIANTS``, by the finding's mark).
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


# Where a code's warnings were right at most half the time (of at least 3) on code nobody here had seen: the
# held-out sets 9 to 24 (370 scripts), each read by the doctor of its own first contact, before any tuning on it,
# and scored against today's truth (docs/doctor.md, "Confidence measured on code never seen"). "entry": the script
# itself; "helper": a project module it calls. Value: (right, findings) at default output (certain and likely).
# Not here: DDP014 and DDP015 (0 of 88), which a script's launch style answers: ``orch doctor`` leaves them out then
# (doctor/launchstyle.py), and they are true where a script is started otherwise; and the codes whose findings also
# decide what is refused before the queue, their errors (DDP002 in the script, 1 of 3; DDP003 in the script, 0 of 3;
# DDP016 in a helper, 3 of 7). DDP013's rows are the first contacts of the held-out sets measured since, 25 to 31 (153
# scripts), as each set's measurement listed them (docs/doctor.md, "Set 25" to "Set 31"): the validation figures of a
# Lightning hook or a rank-0 print that the code, read further, reduces or gathers itself, 3 right of 20.
MEASURED_WEAK: dict[tuple[str, str], tuple[int, int]] = {
    ("DDP013", "entry"): (2, 12),
    ("DDP013", "helper"): (1, 8),
    ("DDP005", "entry"): (12, 41),
    ("DDP005", "helper"): (3, 6),
    ("DDP006", "helper"): (6, 15),
    ("DDP009", "helper"): (3, 8),
    ("DDP017", "entry"): (0, 4),
    ("DDP019", "helper"): (0, 3),
    ("DDP020", "helper"): (2, 5),
}


# Variants of a weak code measured sound on their own (by the finding's mark):
# - DDP006's one writer per node (a save under a local-rank guard: every node's local rank 0 writes the same file): in
#   helper modules 21 of 21 right on the whole corpus (2026-12-02, all made possible by DDP006's helper row above),
#   and each of the 3 found in sets 22 and 23 at their first contact; DDP006's other findings in helpers 16 of 34;
# - DDP005's ``print`` of a loss: 7 of 10 in the script at first contact (sets 9-24), where its logger lines were
#   right in 3 of 8 and its writers, bars and wandb calls in 2 of 21 (what they show off rank 0 is their set-up's,
#   mostly out of sight); a print is every rank's line on the console.
# - DDP013's log of a LightningModule's hook with no ``sync_dist`` (lightning_logs.py), 2026-12-07: 12 of 12 right at
#   set 50's first contact; 8 of 11 on 87 copies of sets 49 and earlier; 28 of 43 on the 22 Lightning scripts of sets
#   45 and 46 (after a ``log`` the class defines itself was left out; set 45's flood of 53, 2 right, was mostly those);
#   48 of 66 in all. DDP013's other findings there: 3 of 4 (set 50) and 1 of 5.
# - DDP013's training summary of a plain loop (rank 0's print or log of an epoch's sum over its own batches,
#   rules_metrics.py), 2026-12-07: 13 of 16 right on the 260 copies of sets 45-52 (each set measured before), where
#   DDP013's other unreduced values left possible were 3 of 18 (10 of them one Lightning script's).
PER_NODE_WRITER = "one writer per node"  # the mark of such a finding (rules_saves.py)
PRINTED = "a print"  # the mark of a DDP005 finding on ``print(...)`` (rules_prints.py)
TRAINING_SUMMARY = "a training summary"  # the mark of a DDP013 finding on a training loop's sum (rules_metrics.py)
LIGHTNING_LOG = "a Lightning hook's log"  # the mark of DDP013 on a LightningModule's self.log (lightning_logs.py)
SOUND_VARIANTS: dict[str, frozenset[str]] = {"DDP006": frozenset({PER_NODE_WRITER}), "DDP005": frozenset({PRINTED}),
                                             "DDP013": frozenset({LIGHTNING_LOG, TRAINING_SUMMARY})}


def measured_weak(code: str, in_helper: bool, marks: frozenset[str] = frozenset()) -> tuple[int, int] | None:
    """``(right, findings)`` where ``code``'s findings were measured weak there (``MEASURED_WEAK``), else None (also
    for a finding whose ``marks`` name a variant of the code measured sound: ``SOUND_VARIANTS``)."""
    if marks & SOUND_VARIANTS.get(code, frozenset()):
        return None
    return MEASURED_WEAK.get((code, "helper" if in_helper else "entry"))


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
