"""``orch top``'s full-screen app (textual: the ``tui`` extra; imported only by ``orch top`` when it runs).

A table of the jobs (:mod:`orchestrator.views.cells`' columns), refreshed every ``interval`` seconds in a
worker thread (:meth:`Board.refresh` of :mod:`orchestrator.service.board` reads only what changed); the
selected job's detail below it (:meth:`Board.detail`, its text :mod:`orchestrator.views.detail`'s). Keys:
arrows move, enter selects a job (its detail), ``c`` cancels it, ``r`` sends it the checkpoint-and-requeue
signal, each after a y/N question; ``q`` quits. The actions are handed in (``orch top`` gives ``orch
cancel``'s code path); what they return, or the error they raise, is the status line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static

from orchestrator.errors import OrchError
from orchestrator.service.board import Board, JobRow
from orchestrator.service.detail import Detail
from orchestrator.views.cells import COLUMNS, cells
from orchestrator.views.detail import detail_text

Action = Callable[[JobRow], str]  # does it, says what was done; an OrchError says why not


@dataclass(frozen=True)
class Actions:
    cancel: Action
    requeue: Action  # the checkpoint-and-requeue signal (the job's launcher.preempt_signal)


def widths(rows: list[JobRow]) -> dict[str, int]:
    """Each column's width: its widest cell or its title."""
    return {title: max([cell_len(title), *(cell_len(show(row)) for row in rows)]) for title, show in COLUMNS.items()}


class Confirm(ModalScreen[bool]):
    """A y/N question; anything but y is no."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "yes"), Binding("n", "answer(False)", "no"),
        Binding("escape", "answer(False)", "no")]
    DEFAULT_CSS = "Confirm { align: center middle; } #question { width: auto; border: thick $warning; padding: 1 2; }"

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        yield Static(f"{self.question}  [y/N]", id="question")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class TopApp(App[None]):
    TITLE = "orch top"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "cancel", "cancel"), Binding("r", "requeue", "checkpoint + requeue"), Binding("q", "quit", "quit")]
    DEFAULT_CSS = "#jobs { height: 1fr; } #detail { height: auto; max-height: 50%; border-top: solid $accent; }"

    def __init__(self, board: Board, actions: Actions, *, interval: float = 0.5) -> None:
        super().__init__()
        self.board = board
        self.actions = actions
        self.interval = interval
        self.rows: dict[str, JobRow] = {}
        self.selected: str | None = None  # the key of the job whose detail shows
        self.message = ""
        self.refreshes = 0
        self.widths: dict[str, int] = {}  # the columns' widths now (title -> cells)
        self._busy = False

    def compose(self) -> ComposeResult:
        yield DataTable(id="jobs", cursor_type="row", zebra_stripes=True)
        yield Static("enter: show a job's ranks, start-up and log", id="detail", markup=False)  # logs hold [ ]
        yield Static("", id="status", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#jobs", DataTable)
        self._columns(table, widths([]))
        table.focus()
        self.tick()
        self.set_interval(self.interval, self.tick)

    # --- refreshing ----------------------------------------------------------------------------

    def tick(self) -> None:
        if not self._busy:
            self._busy = True
            self.run_worker(self._read, thread=True, group="refresh")

    def _read(self) -> None:
        try:
            rows = self.board.refresh()
            detail = self.board.detail(self.selected) if self.selected else None
        except Exception as exc:  # the app keeps running; the status line says why
            self.call_from_thread(self._failed, f"refresh failed: {exc}")
            return
        self.call_from_thread(self._show, rows, detail)

    def _failed(self, message: str) -> None:
        self._busy = False
        if self._screen_gone():
            return
        self.message = message
        self._status()

    def _screen_gone(self) -> bool:
        """The screen is gone (the app is closing): a refresh read before it closed shows nothing."""
        return not self.query("#jobs")

    def _show(self, rows: list[JobRow], detail: Detail | None) -> None:
        self._busy = False
        if self._screen_gone():
            return
        self.refreshes += 1
        table = self.query_one("#jobs", DataTable)
        new = {row.key: row for row in rows}
        wanted = widths(rows)
        if list(new) != list(self.rows) or wanted != self.widths:  # the table again, the cursor on its job
            current = self._current()
            table.clear(columns=wanted != self.widths)
            if wanted != self.widths:
                self._columns(table, wanted)
            for row in rows:
                table.add_row(*map(Text, cells(row)), key=row.key)  # Text: node[1-2] is no markup
            keys = list(new)
            if current is not None and current.key in new:
                table.move_cursor(row=keys.index(current.key))
        else:
            for key, row in new.items():
                if row != self.rows[key]:
                    for title, cell in zip(COLUMNS, cells(row), strict=True):
                        table.update_cell(key, title, Text(cell))
        self.rows = new
        if detail is not None:
            self.query_one("#detail", Static).update(detail_text(detail))
        self._status()

    def _columns(self, table: DataTable[Text], wanted: dict[str, int]) -> None:
        """The columns at the widths their cells need. Fixed widths, never textual's auto width: that one is
        measured when the table is next idle, and a terminal was seen keeping the table drawn at the titles'
        widths (the step count cut) until some cell changed again."""
        for title in COLUMNS:
            table.add_column(title, key=title, width=wanted[title])
        self.widths = wanted

    def _status(self) -> None:
        slurm = f"  Slurm: {self.board.slurm_error}" if self.board.slurm_error else ""
        line = f"{len(self.rows)} jobs, {time.strftime('%H:%M:%S')}{slurm}"
        self.query_one("#status", Static).update(f"{line}  {self.message}".rstrip())

    def _current(self) -> JobRow | None:
        table = self.query_one("#jobs", DataTable)
        if not self.rows or table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self.rows.get(key) if key is not None else None

    # --- keys ----------------------------------------------------------------------------------

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        row = self.rows.get(event.row_key.value or "")
        detail = self.query_one("#detail", Static)
        if row is None or row.job_dir is None:  # a job on a remote cluster: its folder is there
            detail.update(f"{row.name if row else '?'}: a job on a remote cluster; {row.reason if row else ''}")
            return
        self.selected = row.key
        detail.update(f"reading {row.job_dir} ...")
        self.tick()

    def action_cancel(self) -> None:
        self._ask("cancel", "Cancel job")

    def action_requeue(self) -> None:
        self._ask("requeue", "Send the checkpoint-and-requeue signal to job")

    def _ask(self, name: str, question: str) -> None:
        row = self._current()
        if row is None:
            return
        action: Action = getattr(self.actions, name)

        def answered(yes: bool | None) -> None:
            if yes:
                self.message = f"{name}: {row.job_id or row.name} ..."
                self._status()
                self.run_worker(lambda: self._act(action, row), thread=True, group="action")
            else:
                self.message = f"{name}: not sent"
                self._status()

        self.push_screen(Confirm(f"{question} {row.job_id or ''} ({row.name})?".replace("  ", " ")), answered)

    def _act(self, action: Action, row: JobRow) -> None:
        try:
            said = action(row)
        except OrchError as exc:
            said = f"error: {exc.message}" + (f" (HINT: {exc.hint})" if exc.hint else "")
        self.call_from_thread(self._said, said)

    def _said(self, message: str) -> None:
        self.message = message
        self._status()
        self.board.ask_slurm_next()
        self.tick()
