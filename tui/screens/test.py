"""Test (key 7): a ``fabtop test`` plan run from the dashboard, while the fabric is watched.

The plan is chosen and summarized as the headless command does it (the same
:class:`fabtop.commands.fabtest.Bench`: the same refusals, rails and summary), and starts
only after an explicit confirmation: a test loads the fabric. While it runs, a bar per
round, the steps filling in with their verdicts, and beside them the live counters of
the ports under test. Cancelling cancels the runner's task: the launcher ends every tool
on the nodes when its channel closes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Footer, ProgressBar, Static
from textual.worker import Worker, WorkerState

from collectors.text import clean
from fabtop.commands.fabtest import MAX_SECONDS, Ready, port_counters, report_json
from fabtop.fabtest.judge import Status
from fabtop.fabtest.plans import PLANS, Step
from fabtop.fabtest.report import detail, figure, summary
from fabtop.fabtest.runner import Options, Report, StepResult
from fabtop.run.outputs import OutputError, write_text
from tui import format as fmt
from tui.context import WRITE_OFF, ViewContext
from tui.rows.links import link_rows
from tui.rows.links import summary as top_summary
from tui.screens.base import DataScreen
from tui.widgets.keyed_table import Column, FixedTable, Spec
from tui.widgets.quiet_static import QuietStatic
from tui.widgets.top_bar import TopBar

# The browser's read-only view starts no test: a test loads the fabric.
TESTS_OFF = "tests load the fabric: off in the browser view; start fabtop serve with --allow-write"

# What the screen is doing; the keys that make sense follow it (check_action).
CHOOSE, CONFIRM, RUNNING, DONE, CANCELLED = "choose", "confirm", "running", "done", "cancelled"
SECONDS = (1, 2, 5, 10, 30, 60)  # what - and + step through (the command takes any)
UNAVAILABLE = (
    "tests need the hosts' SSH connections: start fabtop with hosts, -c FILE or --demo "
    "(a replay and --from-prometheus only read what was collected)"
)
STATUS_STYLE = {
    Status.PASS: "green",
    Status.WARN: "bold black on yellow",
    Status.RETEST: "yellow",
    Status.OUTLIER: "bold black on yellow",
    Status.FAIL: "bold white on red",
}
# The report's exit status (0 pass, 1 outliers or warnings, 2 failures), as its summary's colour.
EXIT_STYLE = {0: "bold green", 1: "bold black on yellow", 2: "bold white on red"}
# The ports table sits beside the steps from this width; below it, under them.
SIDE_BY_SIDE = 120


def report_name(plan: str, now: datetime | None = None) -> str:
    """``fabtop-test-<plan>-<UTC time>.json``."""
    t = now or datetime.now(UTC)
    return f"fabtop-test-{plan}-{t.strftime('%Y%m%dT%H%M%SZ')}.json"


class StepTable(FixedTable):
    """One row per step of the plan, in the order the runner runs them."""

    COLUMNS = (
        Column("status", "status", width=7, numeric=False),
        Column("step", "step", flex=True, min_width=14, numeric=False, middle=True),
        Column("engine", "engine", width=8, numeric=False, drop=1),
        Column("figure", "figure", flex=True, min_width=12, numeric=False),
    )


class PortTable(FixedTable):
    """The live counters of the ports under test (the links table's rates)."""

    COLUMNS = (
        Column("port", "port", flex=True, min_width=10, numeric=False, middle=True),
        Column("rx", "rx Gb/s", width=6, short="rx"),
        Column("tx", "tx Gb/s", width=6, short="tx"),
        Column("pause", "pause/s", width=6, short="pau"),
        Column("loss", "loss/s", width=6, short="los"),
    )


@dataclass(slots=True)
class Run:
    """One plan as the screen shows it: its steps in run order, and what came back."""

    ready: Ready
    steps: list[tuple[int, Step]] = field(default_factory=list)  # (round, step)
    round: int = 0  # 1-based; 0: not started
    results: dict[int, StepResult] = field(default_factory=dict)  # by index in ``steps``
    report: Report | None = None
    json: str | None = None  # the report as ``-o FILE`` writes it
    retest: int = 0  # outliers being measured once more


def planned(ready: Ready) -> Run:
    """The run of a ready plan, its steps in the order the runner runs them."""
    assert ready.plan is not None
    return Run(ready, [(r.index + 1, s) for r in ready.plan.rounds for s in r.steps])


class TestScreen(DataScreen):
    """Choose a plan, confirm, watch it run, read each step's verdict and evidence."""

    __test__ = False  # not a pytest class, whatever its name

    BINDINGS = [
        Binding("n", "plan", "plan"),
        Binding("minus", "seconds(-1)", "shorter", key_display="-"),
        Binding("plus", "seconds(1)", "longer", key_display="+"),
        Binding("t", "start", "start test"),
        Binding("y", "confirm", "yes, start"),
        Binding("b", "busy", "allow busy"),
        Binding("x", "cancel", "cancel test"),
        Binding("escape", "back", "back", show=False),
        Binding("w", "write", "write report"),
    ]

    DEFAULT_CSS = """
    TestScreen #test-head { height: auto; max-height: 12; padding: 0 1; }
    TestScreen #test-progress { height: 1; padding: 0 1; }
    TestScreen #test-body { height: 1fr; }
    TestScreen #test-body.-narrow { layout: vertical; }
    TestScreen #test-steps { width: 3fr; height: 1fr; }
    TestScreen #test-ports { width: 2fr; height: 1fr; border-left: solid $panel; }
    TestScreen #test-body.-narrow #test-steps { width: 1fr; height: 2fr; }
    TestScreen #test-body.-narrow #test-ports {
        width: 1fr; height: 1fr; border-left: none; border-top: solid $panel;
    }
    TestScreen #test-detail { height: auto; max-height: 50%; border-top: solid $panel; }
    TestScreen #test-detail-text { padding: 0 1; }
    """

    def __init__(self, ctx: ViewContext) -> None:
        super().__init__(ctx, name="test")
        self.plan = PLANS[0]
        self.seconds = 5
        self.allow_busy = False
        self.phase = CHOOSE
        self.current: Run | None = None  # the plan started (running, done, cancelled)
        self.preview: Run | None = None  # the plan chosen, before it starts
        self._busy_refused = False  # refused only for a busy server: b may override
        self._worker: Worker[None] | None = None

    def compose(self) -> ComposeResult:
        yield TopBar(id="top")
        yield QuietStatic(id="test-head")
        yield ProgressBar(id="test-progress", show_eta=False)
        with Horizontal(id="test-body"):
            yield StepTable(id="test-steps")
            yield PortTable(id="test-ports")
        with VerticalScroll(id="test-detail"):
            yield QuietStatic(id="test-detail-text")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#test-detail").display = False
        self.query_one(StepTable).focus()
        self._layout()
        self.refresh_view()

    def on_resize(self) -> None:
        super().on_resize()
        self._layout()

    def _layout(self) -> None:
        narrow = (self.size.width or 80) < SIDE_BY_SIDE
        self.query_one("#test-body").set_class(narrow, "-narrow")

    # ---- what is shown -----------------------------------------------------------

    def refresh_view(self) -> None:
        """The top line, the head and the live counters of the ports under test."""
        super().refresh_view()
        ctx = self.ctx
        self.query_one(TopBar).show(
            top_summary(ctx.state, ctx.now(), ctx.interval), ctx.paused, None
        )
        self._show_all()

    def _show_all(self) -> None:
        self._show_head()  # first: it finds the plan chosen (self.preview)
        self._show_steps()
        self._show_ports()

    def show_flags(self) -> None:
        """Redraw the PAUSED marker."""
        self.query_one(TopBar).show(None, self.ctx.paused, None)

    def _prepare(self) -> Ready | None:
        bench = self.ctx.bench
        if bench is None:
            return None
        options = Options(seconds=self.seconds, allow_busy=self.allow_busy)
        return bench.prepare(self.plan, options)

    def _show_head(self) -> None:
        head = self.query_one("#test-head", Static)
        bar = self.query_one(ProgressBar)
        out = Text()
        if self.ctx.bench is None:
            bar.display = False
            head.update(Text(UNAVAILABLE, "yellow"))
            return
        run = self.current
        if self.phase in (CHOOSE, CONFIRM) or run is None:
            bar.display = False
            out.append("plan ")
            for name in PLANS:
                out.append(f" {name} ", "bold reverse" if name == self.plan else "dim")
            # The options on a line of their own: eight plans fill 80 columns.
            out.append(f"\n{self.seconds} s per run", "bold")
            if self.allow_busy:
                out.append(" · busy servers allowed", "bold yellow")
            ready = self._prepare()
            self.preview = None if ready is None or ready.plan is None else planned(ready)
            busy = ready is not None and ready.busy
            if busy != self._busy_refused:
                self._busy_refused = busy
                self.refresh_bindings()
            if ready is not None:
                self._ready_lines(out, ready)
        else:
            bar.display = True
            plan = run.ready.plan
            assert plan is not None  # a run is made of a ready plan only
            total = len(plan.rounds)
            out.append(clean(run.ready.summary, 600) + "\n", "dim")
            if self.phase == RUNNING:
                word = f"round {run.round} of {total}"
                if run.retest:
                    word = f"{run.retest} outlier(s): measured once more"
                out.append(f"running {plan.name}: {word}", "bold")
                out.append("   x or Esc cancels: every tool on the nodes is ended")
            elif self.phase == CANCELLED:
                out.append(
                    f"cancelled in round {run.round} of {total}: every tool on the nodes "
                    "was ended with it",
                    "bold yellow",
                )
            elif run.report is not None:
                out.append(clean(summary(run.report), 400), EXIT_STYLE[run.report.status])
                out.append("\nEnter on a step: its reasons and evidence · w writes the report")
        head.update(out)

    def _ready_lines(self, out: Text, ready: Ready) -> None:
        if ready.plan is None:
            for line in ready.lines:
                out.append("\n" + clean(line, 400), "bold white on red")
            if ready.busy:
                out.append(
                    "\nb tests anyway (the command line's --allow-busy): the test slows the "
                    "server's traffic",
                    "yellow",
                )
            return
        out.append("\n" + clean(ready.summary, 600))
        for line in ready.lines:
            out.append("\n" + clean(line, 400), "dim")
        if self.phase == CONFIRM:
            out.append(
                "\nThis loads the fabric. y starts it now; Esc goes back.", "bold black on yellow"
            )
        else:
            out.append("\nt starts it (after a confirmation)", "dim")

    def _tested_ports(self) -> list[tuple[str, str, str]]:
        """(host, link id, host/port) of the ports under test: the running round's, else
        every port of the plan."""
        run = self.current or self.preview
        if run is None or run.ready.fabric is None:
            return []
        fabric = run.ready.fabric
        steps = [s for r, s in run.steps if self.phase != RUNNING or r == run.round]
        out: dict[tuple[str, str], str] = {}
        for s in steps:
            for h in dict.fromkeys(s.hosts):
                p = fabric.port(h, s.rail)
                if p is not None:
                    out[(p.host, p.link)] = f"{p.host}/{p.name}"
        return [(h, lid, label) for (h, lid), label in out.items()]

    def _show_ports(self) -> None:
        ctx = self.ctx
        wanted = self._tested_ports()
        table = self.query_one(PortTable)
        if not wanted:
            table.show_rows([])
            return
        rows = {(r.host, r.lid): r for r in link_rows(ctx.state, ctx.now(), ctx.interval, True)}
        out: list[tuple[str, dict[str, Any]]] = []
        for host, lid, label in wanted:
            r = rows.get((host, lid))
            if r is None:
                continue
            pauses = [x for x in (r.pause_rx_per_s, r.pause_tx_per_s) if x is not None]
            loss = r.loss_per_s
            out.append(
                (
                    f"{host}\x1f{lid}",
                    {
                        "port": Spec(clean(label, 200)),
                        "rx": Spec(fmt.gbps(r.rx_bps), justify="right"),
                        "tx": Spec(fmt.gbps(r.tx_bps), justify="right"),
                        "pause": Spec(
                            fmt.si(sum(pauses)) if pauses else fmt.DASH,
                            "yellow" if pauses and sum(pauses) else "",
                            justify="right",
                        ),
                        "loss": Spec(fmt.si(loss), "bold red" if loss else "", justify="right"),
                    },
                )
            )
        table.show_rows(out)

    def _show_steps(self) -> None:
        run = self.current or self.preview
        table = self.query_one(StepTable)
        if run is None:
            table.show_rows([])
            return
        rows: list[tuple[str, dict[str, Any]]] = []
        for i, (rnd, step) in enumerate(run.steps):
            res = run.results.get(i)
            if res is not None:
                v = res.verdict
                word = v.status.word + ("*" if res.retested else "")
                cells = {
                    "status": Spec(word, STATUS_STYLE.get(v.status, "")),
                    "step": Spec(clean(step.label, 200)),
                    "engine": Spec(res.engine or fmt.DASH),
                    "figure": Spec(clean(figure(v), 200)),
                }
            else:
                # Verdicts come when every round ran: until then, where each step is.
                started = self.phase in (RUNNING, CANCELLED)
                now = started and rnd == run.round and not run.retest
                word = fmt.DASH
                if started and (rnd < run.round or run.retest):
                    word = "ran"
                elif now:
                    word = "run" if self.phase == RUNNING else "stopped"
                cells = {
                    "status": Spec(word, "bold" if now else "dim"),
                    "step": Spec(clean(step.label, 200)),
                }
            rows.append((str(i), cells))
        table.show_rows(rows)

    # ---- the run -----------------------------------------------------------------

    def _progress(self, what: str, i: int, n: int, res: StepResult | None) -> None:
        run = self.current
        if run is None:
            return
        bar = self.query_one(ProgressBar)
        if what == "round":
            run.round = i
            bar.update(total=n, progress=i - 1)
        elif what == "retest":
            run.retest = i
        elif what == "verdict" and res is not None:
            run.results[i - 1] = res
        self._show_all()

    async def _run(self, run: Run) -> None:
        bench, plan, fabric = self.ctx.bench, run.ready.plan, run.ready.fabric
        assert bench is not None and plan is not None and fabric is not None
        runner = bench.runner(run.ready, self._progress)
        before = port_counters(bench.state, fabric)
        report = await runner.run(plan)
        self.finished(run, report, report_json(report, before, port_counters(bench.state, fabric)))

    def finished(self, run: Run, report: Report, json: str) -> None:
        """Show ``run`` done: every verdict, the summary, and ``json`` for ``w``."""
        self.current, run.report, run.json = run, report, json
        run.results = dict(enumerate(report.results))
        rounds = len(run.ready.plan.rounds) if run.ready.plan is not None else 1
        self.query_one(ProgressBar).update(total=rounds, progress=rounds)
        self.phase = DONE
        self._show_all()
        self.refresh_bindings()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self._worker:
            return
        if event.state == WorkerState.CANCELLED:
            self.phase = CANCELLED
        elif event.state == WorkerState.ERROR:
            self.phase = CANCELLED
            self.notify(f"the test stopped: {event.worker.error}", severity="error", timeout=30)
        else:
            return
        self._show_all()
        self.refresh_bindings()

    # ---- keys --------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Only the keys that make sense now (the footer shows those)."""
        if self.ctx.bench is None:
            return action not in {"plan", "seconds", "start", "confirm", "busy", "cancel", "write"}
        choosing = self.phase in (CHOOSE, DONE, CANCELLED)
        return {
            "plan": choosing,
            "seconds": choosing,
            "start": choosing,
            # shown where it matters: a busy server refused the plan, or it was allowed
            "busy": choosing and (self.allow_busy or self._busy_refused),
            "confirm": self.phase == CONFIRM,
            "cancel": self.phase == RUNNING,
            "write": self.phase == DONE,
        }.get(action, True)

    def _changed(self) -> None:
        if self.phase in (DONE, CANCELLED):  # a new choice starts over
            self.phase, self.current = CHOOSE, None
            self.query_one("#test-detail").display = False
        self._show_all()
        self.refresh_bindings()

    def action_plan(self) -> None:
        """The next plan."""
        self.plan = PLANS[(PLANS.index(self.plan) + 1) % len(PLANS)]
        self._changed()

    def action_seconds(self, step: int) -> None:
        """Seconds per run, down or up."""
        i = min(range(len(SECONDS)), key=lambda k: abs(SECONDS[k] - self.seconds))
        self.seconds = min(MAX_SECONDS, SECONDS[max(0, min(len(SECONDS) - 1, i + step))])
        self._changed()

    def action_busy(self) -> None:
        """Test although an inference server is generating tokens (--allow-busy)."""
        self.allow_busy = not self.allow_busy
        self._changed()

    def action_start(self) -> None:
        """Ask to confirm the plan (a test loads the fabric: never one key)."""
        if not self.ctx.allow_write:
            # The browser's read-only view: a test loads the fabric, more than a file does.
            self.notify(TESTS_OFF, severity="warning", timeout=6)
            return
        ready = self._prepare()
        if ready is None or ready.plan is None:
            self.notify("the plan cannot start: the lines above say why", severity="warning")
            return
        self.phase, self.current = CONFIRM, None
        self.query_one("#test-detail").display = False
        self._show_all()
        self.refresh_bindings()

    def action_confirm(self) -> None:
        """Start the confirmed plan, checked once more (a host may have turned busy)."""
        if self.phase != CONFIRM or not self.ctx.allow_write:
            return
        ready = self._prepare()
        if ready is None or ready.plan is None:
            self.phase = CHOOSE
            self._show_all()
            self.refresh_bindings()
            return
        run = planned(ready)
        self.current, self.phase = run, RUNNING
        self.query_one(ProgressBar).update(total=len(ready.plan.rounds), progress=0)
        self._show_all()
        self.refresh_bindings()
        self._worker = self.run_worker(
            self._run(run), name="fabtest", group="fabtest", exclusive=True, exit_on_error=False
        )

    def action_cancel(self) -> None:
        """Stop the plan: the runner's task is cancelled, and with it every tool."""
        if self._worker is not None and self.phase == RUNNING:
            self._worker.cancel()

    def action_back(self) -> None:
        """Esc: cancel a running plan, leave the confirmation, or close a step's detail."""
        if self.phase == RUNNING:
            self.action_cancel()
        elif self.phase == CONFIRM:
            self.phase = CHOOSE
            self._show_all()
            self.refresh_bindings()
        else:
            self.query_one("#test-detail").display = False

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a step: its reasons, problems, notes and evidence lines."""
        run = self.current
        if run is None or event.data_table is not self.query_one(StepTable):
            return
        i = int(str(event.row_key.value))
        res = run.results.get(i)
        if res is None:
            return
        v = res.verdict
        text = Text(f"{v.status.word.upper()}: {clean(v.step.label, 200)}", "bold")
        for line in detail(res) or ["every mark met"]:
            text.append("\n  " + line)
        self.query_one("#test-detail-text", Static).update(text)
        self.query_one("#test-detail").display = True

    def action_write(self) -> None:
        """Write the JSON report (``fabtop test -o``'s) to the current directory."""
        run = self.current
        if run is None or run.json is None:
            return
        if not self.ctx.allow_write:
            self.notify(WRITE_OFF, severity="warning", timeout=6)
            return
        path = Path.cwd() / report_name(run.ready.plan.name if run.ready.plan else self.plan)
        try:
            write_text(path, run.json, "test report")
        except OutputError as e:
            self.notify(f"report not written: {e}", severity="error", timeout=10)
            return
        self.notify(f"test report written to {path}", timeout=6)
