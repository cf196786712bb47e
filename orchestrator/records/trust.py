"""Trust of job folders: who may have written what orch is about to run or load (pure checks on stat).

A job folder's ``job.json`` names the Python file every task imports and its checkpoints are
unpickled by every rank, so whoever can write them runs code as you. Before ``orch run --resume``
and before each task reads a job folder, orch checks that the folder, every folder above it,
``job.json`` and the checkpoints can only have been written by you (or root):

* the job root, the job folder and its files: owned by you (or root), not writable by group or
  others, except a folder with the sticky bit (``/tmp``), where nobody can rename or delete what
  others own;
* every folder above: not writable by others without the sticky bit (a group-writable project
  folder is the group's choice and stays allowed);
* regular files and real folders, not symbolic links, for job.json, the checkpoints and their sidecars;
* a symbolic link anywhere on the path (the job folder, ``checkpoints/``, a folder above) is itself
  owned by you or root (another user could point it elsewhere at any time), and what it leads to is
  checked as above, folder by folder; ``checkpoints/`` linked out of the job folder (to scratch space)
  must lead into folders that are all owned by you or root (a folder another user owns can be
  emptied and refilled by them).

Every path a resume reads goes through :func:`check_job_dir` (``orch run --resume``, the batch script
before srun, each task at start, so a requeue too) and :func:`check_checkpoint` (rank 0, right before
it loads the checkpoint it chose), before any rank unpickles anything.

``JOB_ROOT_MODE`` is the one mode orch creates job roots and job folders with (orch run and orch
submit alike, set with chmod whatever the umask: secrets in a job folder stay yours); ``make_job_root``
creates a root and checks it. Functions take the stat results or paths and raise :class:`TrustError`;
nothing here changes a mode but the job root's own.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from orchestrator.errors import ConfigError

JOB_ROOT_MODE = 0o700  # job roots and job folders, set exactly (chmod: whatever the umask): yours only
_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH
_ROOT_UID = 0


class TrustError(ConfigError):
    """A job folder (or a file in it) that someone else could have written."""


def _owner_ok(st: os.stat_result, uid: int) -> bool:
    return st.st_uid in (uid, _ROOT_UID)


def problem(st: os.stat_result, uid: int, *, is_dir: bool) -> str | None:
    """Why an entry with stat ``st`` is not trusted by user ``uid`` (None: trusted)."""
    if is_dir and not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if not is_dir and not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if not _owner_ok(st, uid):
        return f"is owned by uid {st.st_uid}, not by you (uid {uid})"
    if st.st_mode & _WRITABLE_BY_OTHERS and not (is_dir and st.st_mode & stat.S_ISVTX):
        who = "group and others" if st.st_mode & stat.S_IWGRP and st.st_mode & stat.S_IWOTH else (
            "its group" if st.st_mode & stat.S_IWGRP else "others")
        return f"is writable by {who} (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _ancestor_problem(st: os.stat_result) -> str | None:
    if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        return f"is writable by others without the sticky bit (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _raise(path: Path, what: str, reason: str, fix: str) -> None:
    if reason.startswith("is not a"):
        fix = ("a file stands where the folder should be: move it away, or choose another launcher.job_root "
               "(or --job-root)" if "job root" in what else
               "the job folder is damaged: move it away and start a new job (or restore it)")
        raise ConfigError(f"{what} {path} {reason}", hint=fix)
    raise TrustError(f"{what} {path} {reason}, so another user could have changed what orch would run",
                     hint=fix)


_ROOT_FIX = "use a launcher.job_root (or --job-root) in a folder only you can write, or chmod go-w {folder}"
_CKPT_FIX = ("keep checkpoints/ a real folder inside the job folder, or link it only into folders that you "
             "own and only you can write (chmod go-w {folder}); then resume again")


def check_folder(path: Path, what: str, *, uid: int | None = None, ancestors: bool = True,
                 owned: bool = False, fix: str = _ROOT_FIX) -> None:
    """``path`` and (with ``ancestors``) every folder above it must be trusted folders; a symbolic
    link on the way must be yours (or root's), and the folders it leads to are checked too.
    ``owned``: the folders above must also be owned by you or root (a link's target outside the job)."""
    uid = os.getuid() if uid is None else uid
    path = Path(os.path.abspath(path))
    chain = [path, *path.parents] if ancestors else [path]
    for index, folder in enumerate(chain):
        try:
            st = folder.lstat()
        except FileNotFoundError:
            continue  # not created yet (a job root orch is about to create)
        except OSError as exc:
            raise TrustError(f"cannot check {what} {folder}: {exc.strerror}",
                             hint="check the path and its permissions") from None
        label = what if index == 0 else f"the folder above {what}"
        if stat.S_ISLNK(st.st_mode):
            if not _owner_ok(st, uid):  # its owner can point it anywhere, at any time
                _raise(folder, f"{label} (a symbolic link)",
                       f"is owned by uid {st.st_uid}, not by you (uid {uid})",
                       f"replace the link {folder} with one you own (or the real path)")
            if index != 0:
                continue  # resolved parents are checked through os.path.realpath below
            try:
                st = folder.stat()  # a job root may be a symlink the user made; its target is checked
            except OSError as exc:
                raise TrustError(f"cannot check {what} {folder}: {exc.strerror}",
                                 hint="the link leads nowhere: fix or remove it") from None
        if index == 0:
            reason = problem(st, uid, is_dir=True)
        else:
            reason = _ancestor_problem(st) or (problem_owner(st, uid) if owned and folder != folder.parent else None)
        if reason is not None:
            _raise(folder, label, reason, fix.format(folder=folder))
    real = Path(os.path.realpath(path))
    if ancestors and real != path:
        check_folder(real, what, uid=uid, ancestors=True, owned=owned, fix=fix)


def problem_owner(st: os.stat_result, uid: int) -> str | None:
    return None if _owner_ok(st, uid) else f"is owned by uid {st.st_uid}, not by you (uid {uid})"


def check_checkpoint_folder(ckpt: Path, job_dir: Path, *, uid: int | None = None) -> None:
    """``checkpoints/`` of ``job_dir``: trusted folder, links yours; when it leads out of the job folder
    (a link to scratch space), every folder it leads through must be owned by you or root."""
    real, home = os.path.realpath(ckpt), os.path.realpath(job_dir)
    outside = os.path.commonpath([real, home]) != home
    check_folder(ckpt, "the checkpoint folder", uid=uid, ancestors=True, owned=outside, fix=_CKPT_FIX)


def check_checkpoint(checkpoint: Path, *, uid: int | None = None, sidecar_suffix: str = ".json") -> None:
    """Right before a rank loads ``checkpoint``: its folder (as :func:`check_checkpoint_folder`), the
    file and its sidecar (regular files, yours, not writable by others, not links)."""
    folder = checkpoint.parent
    check_checkpoint_folder(folder, folder.parent, uid=uid)
    check_file(checkpoint, "the checkpoint", uid=uid)
    check_file(checkpoint.with_name(checkpoint.name + sidecar_suffix), "the checkpoint's sidecar", uid=uid)


def check_file(path: Path, what: str, *, uid: int | None = None) -> None:
    """``path`` (when it exists) must be a regular file, not a link, owned by you, not writable by others."""
    uid = os.getuid() if uid is None else uid
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise TrustError(f"cannot check {what} {path}: {exc.strerror}", hint="check its permissions") from None
    reason = "is a symbolic link" if stat.S_ISLNK(st.st_mode) else problem(st, uid, is_dir=False)
    if reason is not None:
        _raise(path, what, reason, f"only trust files you wrote: remove {path} or start a new job")


def check_job_dir(job_dir: Path, *, job_file: str, checkpoint_dir: str,
                  checkpoints: Iterable[str] = ("*.pt", "*.pt.json"), uid: int | None = None) -> None:
    """The whole trust check of a job folder before it is used: folders, job.json, checkpoints."""
    check_folder(job_dir, "the job folder", uid=uid)
    check_file(job_dir / job_file, "the job file", uid=uid)
    ckpt = job_dir / checkpoint_dir
    if ckpt.is_symlink() or ckpt.exists():
        check_checkpoint_folder(ckpt, job_dir, uid=uid)
        for pattern in checkpoints:
            for path in sorted(ckpt.glob(pattern)):
                check_file(path, "the checkpoint", uid=uid)


def make_job_root(root: Path) -> None:
    """Create the job root (mode ``JOB_ROOT_MODE``) when missing and check it and the folders above it.

    File-system errors become a ConfigError naming launcher.job_root.
    """
    check_folder(root, "the job root (launcher.job_root)")
    missing = []
    folder = Path(os.path.abspath(root))
    while not folder.exists() and not folder.is_symlink() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    try:
        for new in reversed(missing):  # each with the one mode (mkdir(parents=True) would use 0o777 & umask)
            new.mkdir(mode=JOB_ROOT_MODE, exist_ok=True)
            new.chmod(JOB_ROOT_MODE)  # the umask may have taken bits away (or the mode was 0o000 & ~umask)
    except OSError as exc:
        raise fs_error(root, exc) from None
    check_folder(root, "the job root (launcher.job_root)")


def fs_error(path: Path, exc: OSError) -> ConfigError:
    """A file-system error while writing a job folder, as a ConfigError naming launcher.job_root."""
    reason = exc.strerror or type(exc).__name__
    where = exc.filename if isinstance(exc.filename, str) else path
    if isinstance(exc, FileExistsError) and Path(where) == path:
        return ConfigError(f"the job folder {path} already exists: orch never reuses a job folder",
                           hint="submit again (each job gets a new folder name)")
    return ConfigError(f"cannot write the job folder at {where}: {reason}",
                       hint="choose a launcher.job_root (or --job-root) on a writable file system with free "
                            "space, where no file stands in the way of a folder")
