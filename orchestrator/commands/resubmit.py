"""``orch resubmit SWEEP --failed [--dry-run] [--json]``: submit a sweep's failed and timed-out elements again.

SWEEP is the sweep's folder, its array id (that of any of its submissions) or one element's id or folder. Only
the elements orch reads as failed or timed out are queued, as one new job array over their indices
(``--array=1,3``); each runs in its own folder again and resumes from its newest checkpoint
(:mod:`orchestrator.service.resubmit`). The resubmission is recorded in the sweep's folder, so ``orch status`` and
``orch compare`` of the sweep show each element's latest run. A job that is not a sweep is refused: it continues
from its checkpoint through ``launcher.requeue`` (or ``orch run --resume`` locally).
"""

from __future__ import annotations

import argparse

from orchestrator.commands._common import add_cluster_argument, add_json_argument, print_json, scope
from orchestrator.errors import ConfigError
from orchestrator.service.resubmit import plan, resubmit


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", metavar="SWEEP", help="the sweep's folder or array id (or one element's)")
    parser.add_argument("--failed", action="store_true",
                        help="submit the elements that failed or timed out again (required: the only selection)")
    parser.add_argument("--dry-run", action="store_true", help="say which elements would be submitted; queue nothing")
    add_cluster_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    if not args.failed:
        raise ConfigError("orch resubmit needs --failed (which elements to submit again)",
                          hint=f"orch resubmit {args.job} --failed")
    planned = plan(args.job, scope(args))
    done = planned if args.dry_run else resubmit(planned)
    if args.json:
        print_json({**done.as_dict(), "dry_run": bool(args.dry_run)})
        return 0
    head = ("would submit" if args.dry_run else "submitted") + f" {len(done.elements)} element(s) of sweep " \
        f"{done.folder} again" + (f" as job array {done.job_id}" if done.job_id else "") + f" (--array={done.array}):"
    print(head)
    for element in done.elements:
        print(f"{done.element_id(element) or f'[{element.index}]'}  {element.job_dir}  was {element.job_id} "
              f"{element.state}")
    print("each resumes from its newest checkpoint" if not args.dry_run else
          f"sbatch --array={done.array} {done.folder / 'sbatch.sh'} (each element resumes from its newest checkpoint)")
    return 0
