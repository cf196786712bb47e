"""Forward orch's verbs to the cluster's own orch when the cluster file has a ``remote:`` block.

``orch submit`` ships the code tree first (:mod:`orchestrator.remote.ship`), then runs the cluster's
orch with the same arguments in the shipped copy, so the rendered script, the checks and the job
folder are exactly those of a submit on the login node; the laptop records the job in its index of
submitted jobs (:mod:`orchestrator.records.jobindex`, with ``remote`` set) so ``orch list`` shows it
and ``orch status/logs/cancel/plot JOBID`` find its cluster without ``--cluster``. Every call
passes the cluster file (without its ``remote:`` block) to the remote orch, written (when not there
yet) to ``<remote.workdir>/.orch/cluster-<name>-<digest>.yaml`` in the same round trip.

The dry run of a remote submit runs nothing remotely (it says what would be shipped, then renders
here) unless ``--remote-check``: then the code is shipped and the cluster's orch does the dry run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from orchestrator.errors import ConfigError
from orchestrator.records.cache import find_cluster
from orchestrator.records.jobindex import Submitted, append_index, lookup, now_text
from orchestrator.remote.ssh import Connection, RemoteError, missing_orch, orch_command, remote_path
from orchestrator.spec.cluster import Cluster
from orchestrator.spec.clusterfiles import find_cluster_file

VERBS = ("submit", "status", "logs", "cancel", "list", "plot", "resubmit")
REF_VERBS = ("status", "logs", "cancel", "plot", "resubmit")  # verbs that name jobs: a remote job id finds its cluster
_SUBMITTED = re.compile(r"^submitted job (?:array )?(\S+)", re.M)
_FOLDER = re.compile(r"^job folder: (.+)$", re.M)


def forwarded(args: argparse.Namespace, argv: Sequence[str]) -> int | None:
    """Run ``args.verb`` on the cluster when its cluster file is remote (the exit code); None: run here."""
    if args.verb not in VERBS:
        return None
    found = _remote_cluster(args)
    if found is None:
        return None
    cluster, path = found
    words = _strip_cluster(list(argv))
    if args.verb == "submit":
        return _submit(args, words, cluster, path)
    conn = Connection(cluster.remote)  # type: ignore[arg-type]  # _remote_cluster: remote is set
    if args.verb == "logs" and args.follow:
        from orchestrator.remote.follow import follow

        return follow(conn, _command(cluster, words), b"", lines=args.lines)
    if args.verb == "plot" and args.output:
        return _plot(conn, cluster, words, Path(args.output))
    return _passthrough(conn, _command(cluster, words), b"")


def _remote_cluster(args: argparse.Namespace) -> tuple[Cluster, Path] | None:
    """The remote cluster this command goes to: the cluster file in use when it has ``remote:``; else,
    without ``--cluster``, the one that the job ids were submitted to from here (the index)."""
    cwd = Path.cwd()
    explicit = getattr(args, "cluster", None)
    if not explicit and args.verb in REF_VERBS:
        indexed = _indexed_remote(args, cwd)
        if indexed is not None:
            return indexed
    cluster = find_cluster(explicit, os.environ, cwd, required=False)
    if cluster is None or cluster.remote is None:
        return None
    return cluster, find_cluster_file(explicit, os.environ, cwd)


def _indexed_remote(args: argparse.Namespace, cwd: Path) -> tuple[Cluster, Path] | None:
    refs = [str(ref) for ref in (getattr(args, "jobs", None) or [getattr(args, "job", None)]) if ref]
    newest = [next(iter(lookup(ref)), None) for ref in refs]
    files = {record.remote if record is not None else None for record in newest}
    if not refs or len(files) != 1 or None in files:
        return None  # not all of them jobs sent to one remote cluster: the cluster file in use decides
    path = Path(str(files.pop()))
    remote = find_cluster(str(path), os.environ, cwd, required=False)
    return (remote, path) if remote is not None and remote.remote is not None else None


def _strip_cluster(argv: list[str]) -> list[str]:
    """The command line without ``--cluster X`` and ``--remote-check`` (before ``--`` only)."""
    end = argv.index("--") if "--" in argv else len(argv)
    head, tail = argv[:end], argv[end:]
    out: list[str] = []
    skip = False
    for word in head:
        if skip:
            skip = False
        elif word == "--cluster":
            skip = True
        elif not word.startswith("--cluster=") and word != "--remote-check":
            out.append(word)
    return out + tail


def _prelude(cluster: Cluster) -> str:
    """Set ``$d`` to ``<remote.workdir>/.orch`` and ``$c`` to the cluster file there (without its
    ``remote:`` block), written when that content is not there yet: the name carries a digest of the
    content, so an unchanged file costs one ``test -f`` and no process."""
    import hashlib

    assert cluster.remote is not None
    text = cluster_text(cluster)
    name = f"cluster-{cluster.name}-{hashlib.sha256(text).hexdigest()[:12]}.yaml"
    workdir = cluster.remote.workdir
    base = remote_path(workdir) if workdir.startswith(("/", "~")) else '"$HOME"/' + shlex.quote(workdir)
    return (f'umask 077; d={base}/.orch; c="$d/{name}"; [ -f "$c" ] || {{ mkdir -p "$d" && '
            f'printf %s {shlex.quote(text.decode())} > "$c.$$" && mv -f "$c.$$" "$c"; }} && ')


def cluster_text(cluster: Cluster) -> bytes:
    import yaml

    data = cluster.model_dump(mode="json", exclude={"remote"}, exclude_defaults=True)
    return yaml.safe_dump(data, sort_keys=False).encode()


def _command(cluster: Cluster, words: list[str], *, cwd: str | None = None, tail: str = "") -> str:
    """The remote line: write the cluster file, cd, run orch with ``words`` plus ``--cluster "$c"``."""
    assert cluster.remote is not None
    end = words.index("--") if "--" in words else len(words)
    line = orch_command(cluster.remote, words[:end], cwd=cwd, prelude=_prelude(cluster))
    line += ' --cluster "$c"' + (" " + shlex.join(words[end:]) if words[end:] else "")
    if tail:  # not exec: something runs after orch
        line = line.replace(" && exec ", " && ", 1).replace("exec ", "", 1) + tail
    return line


def _run(conn: Connection, command: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    proc = conn.run(command, stdin=stdin)
    proc.stderr = conn.forget_stale(proc.stderr)
    problem = missing_orch(proc.returncode, proc.stderr.decode(errors="replace"), conn.remote, conn.dest)
    if problem is not None:
        raise problem
    if proc.returncode == 255:
        raise RemoteError(f"the SSH connection to {conn.dest} failed: "
                          f"{proc.stderr.decode(errors='replace').strip()[-300:]}",
                          hint="run the command again (the connection is opened anew)")
    return proc


def _passthrough(conn: Connection, command: str, stdin: bytes) -> int:
    proc = _run(conn, command, stdin)
    sys.stdout.buffer.write(proc.stdout)
    sys.stdout.flush()
    sys.stderr.buffer.write(proc.stderr)
    return proc.returncode


def _plot(conn: Connection, cluster: Cluster, words: list[str], output: Path) -> int:
    """``orch plot -o PNG``: drawn there into a temporary file, copied here."""
    keep: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in ("-o", "--output"):
            skip = True
        elif not (word.startswith("--output=") or (word.startswith("-o") and len(word) > 2)):
            keep.append(word)
    line = _command(cluster, keep, tail=' -o "$d/plot-$$.png" >&2 && cat "$d/plot-$$.png"; r=$?; '
                    'rm -f "$d/plot-$$.png"; exit $r')
    proc = _run(conn, line, b"")
    sys.stderr.buffer.write(proc.stderr)
    if proc.returncode == 0:
        output.write_bytes(proc.stdout)
        print(f"wrote {output}")
    return proc.returncode


def _submit(args: argparse.Namespace, words: list[str], cluster: Cluster, path: Path) -> int | None:
    from orchestrator.remote.ship import dest_for, ship
    from orchestrator.remote.tree import code_tree

    assert cluster.remote is not None
    remote = cluster.remote
    conn = Connection(remote)
    cwd = Path.cwd()
    job = Path(args.job).expanduser() if args.job else None
    target = job if job is not None and job.is_file() else cwd if args.module else None
    tree = code_tree(target) if target is not None else None
    if args.dry_run and not getattr(args, "remote_check", False):
        what = (f"ships {len(tree.files)} files of {tree.root} (the changed ones) to "
                f"{conn.dest}:{dest_for(remote.workdir, tree)}, then " if tree is not None else "")
        print(f"# remote: {what}runs {remote.orch} submit there (the script below is this machine's rendering; "
              "--remote-check renders it there)", file=sys.stderr if args.json else sys.stdout)
        return None  # the local dry run follows
    cwd_there = remote.workdir
    if tree is not None:
        shipped = ship(conn, tree, remote.workdir, os.environ)
        done = f"shipped {shipped.sent} changed file(s) ({shipped.method})" if shipped.sent else "no file changed"
        print(f"orch: {tree.root} -> {conn.dest}:{shipped.dest}: {done}", file=sys.stderr)
        inside = cwd == tree.root or tree.root in cwd.parents
        base = cwd if inside else tree.root
        cwd_there = f"{shipped.dest}/{cwd.relative_to(tree.root).as_posix()}" if inside else shipped.dest
        if job is not None and target is job:
            words = _replace_job(words, args.job, os.path.relpath(job.resolve(), base.resolve()))
    proc = _run(conn, _command(cluster, words, cwd=cwd_there), b"")
    sys.stdout.buffer.write(proc.stdout)
    sys.stdout.flush()
    sys.stderr.buffer.write(proc.stderr)
    if proc.returncode == 0 and not args.dry_run:
        _record(proc.stdout.decode(errors="replace"), args, cluster, path)
    return proc.returncode


def _replace_job(words: list[str], token: str, new: str) -> list[str]:
    end = words.index("--") if "--" in words else len(words)
    start = words.index("submit") + 1 if "submit" in words[:end] else 0
    for i in range(start, end):
        if words[i] == token:
            return [*words[:i], new, *words[i + 1:]]
    raise ConfigError(f"cannot find {token!r} on the command line", hint="name the script once")


def _record(out: str, args: argparse.Namespace, cluster: Cluster, path: Path) -> None:
    """The remote job in this machine's index (orch list, and status/logs/cancel JOBID without --cluster)."""
    job_id = job_dir = None
    if args.json:
        try:
            data = json.loads(out)
            job_id, job_dir = str(data["job_id"]), str(data["job_dir"])
        except (ValueError, KeyError, TypeError):
            pass
    else:
        got_id, got_dir = _SUBMITTED.search(out), _FOLDER.search(out)
        job_id = got_id.group(1) if got_id else None
        job_dir = got_dir.group(1).strip() if got_dir else None
    if not job_id or not job_dir:
        return
    name = args.job_name or (Path(args.job).stem if args.job else args.module) or "job"
    append_index(Submitted(job_id=job_id, job_dir=job_dir, submitted=now_text(), job_name=name,
                           cluster=cluster.name, remote=str(path.resolve())))


def remote_rows(limit: int) -> list[dict[str, str | None]]:
    """``orch list``'s rows for the jobs submitted from here to remote clusters (from the index only)."""
    from orchestrator.records.jobindex import read_index

    rows: list[dict[str, str | None]] = []
    seen: set[tuple[str, str]] = set()
    for record in read_index():
        if record.remote is None or (record.remote, record.job_id) in seen:
            continue
        seen.add((record.remote, record.job_id))
        rows.append({"name": record.job_name, "job_id": record.job_id, "created": record.submitted,
                     "state": "REMOTE", "reason": f"orch list --cluster {record.remote}",
                     "job_dir": f"{record.cluster}:{record.job_dir}"})
        if limit and len(rows) >= limit:
            break
    return rows
