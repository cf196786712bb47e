"""A script Python cannot compile (nested beyond the parser's limits) ends ``orch run`` with one error from the
rank naming the script, not a traceback through orch's launcher; a sibling module the doctor cannot read is
a warning naming that module, and the script itself is still checked. Real ``orch`` processes."""

from __future__ import annotations

import resource
import subprocess
from pathlib import Path

import pytest
from support import ORCH, clean_environ

TIMEOUT = 120


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3_000_000_000, 3_000_000_000))


DEEP = {
    "sum": "z = " + " + ".join(["7"] * 110_000) + "\n",
    "unary": "z = " + "- " * 55_000 + "7\n",
    "parentheses": "z = " + "(" * 260 + "7" + ")" * 260 + "\n",
}


@pytest.mark.parametrize("which", list(DEEP))
def test_orch_run_of_a_script_python_cannot_compile(which: str, tmp_path: Path) -> None:
    script = tmp_path / f"nested_{which}.py"
    script.write_text(DEEP[which], encoding="utf-8")
    proc = subprocess.run([ORCH, "run", str(script), "--job-root", str(tmp_path / "jobs")], capture_output=True,
                          text=True, timeout=TIMEOUT, env=clean_environ(), cwd=tmp_path)  # torch needs its memory
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, proc.stderr
    said = "is not valid Python" if which == "parentheses" else "Python cannot compile"  # refused before any rank
    assert said in proc.stderr and str(script) in proc.stderr and "HINT:" in proc.stderr, proc.stderr


def test_the_doctor_names_the_sibling_module_it_cannot_read(tmp_path: Path) -> None:
    (tmp_path / "nested_helper.py").write_text("w = " + "1+" * 45_000 + "1\n", encoding="utf-8")
    (tmp_path / "train_main.py").write_text("import nested_helper\nprint(nested_helper.w)\n", encoding="utf-8")
    proc = subprocess.run([ORCH, "doctor", "train_main.py"], capture_output=True, text=True, timeout=TIMEOUT,
                          env=clean_environ(), cwd=tmp_path, preexec_fn=_limit_memory)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "nested_helper.py" in proc.stderr and "train_main.py: too" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
