"""KeyedTable: DataTable's private state stays untouched, and keyed updates behave."""

from __future__ import annotations

import ast
from pathlib import Path

from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widgets import DataTable

from tui.widgets.keyed_table import Column, KeyedTable, Spec, fit_columns

MODULE = Path(__file__).resolve().parents[2] / "tui" / "widgets" / "keyed_table.py"


def datatable_private_names() -> set[str]:
    """Private attributes and methods of DataTable and its bases (ScrollView, Widget, ...)."""
    names: set[str] = set()
    for cls in DataTable.__mro__:
        names |= set(vars(cls))
    names |= set(vars(DataTable()))  # what __init__ sets: _data, _row_locations, caches...
    return {n for n in names if n.startswith("_") and not n.endswith("__")}


def private_uses(source: str, private: set[str]) -> list[str]:
    """Where ``source`` reads, writes, calls or overrides one of the ``private`` names."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in private:
            owner = node.value
            is_self = isinstance(owner, ast.Name) and owner.id == "self"
            is_super = (
                isinstance(owner, ast.Call)
                and isinstance(owner.func, ast.Name)
                and owner.func.id == "super"
            )
            if is_self or is_super:
                found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if (
                    isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                    and item.name in private
                ):
                    found.append(f"line {item.lineno}: def {item.name}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "delattr")
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in private
        ):
            found.append(f"line {node.lineno}: {node.func.id}({node.args[1].value!r})")
    return found


def test_the_check_sees_private_state() -> None:
    private = datatable_private_names()
    assert {"_data", "_update_count", "_render_cell", "_row_locations"} <= private
    old = (
        "class T(DataTable):\n"
        "    def _render_cell(self): return super()._render_cell()\n"
        "    def sync(self):\n"
        "        self._data[k][c] = v\n"
        "        self._update_count += 1\n"
        "        setattr(self, '_show_hover_cursor', True)\n"
    )
    assert len(private_uses(old, private)) == 5


def test_keyed_table_touches_no_private_datatable_state() -> None:
    assert private_uses(MODULE.read_text(), datatable_private_names()) == []


COLUMNS = [Column("name", "Name", 8, False), Column("rx", "RX", 6)]


def rows(values: dict[str, str]) -> list[tuple[str, dict[str, Text | Spec]]]:
    return [
        (k, {"name": Spec(k.split("\x1f")[1], "bold"), "rx": Text(v, justify="right")})
        for k, v in values.items()
    ]


class TableApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.headers: list[str] = []
        self.selected: list[str] = []

    def compose(self) -> ComposeResult:
        yield KeyedTable(id="t")

    def on_mount(self) -> None:
        table = self.query_one(KeyedTable)
        table.set_columns(COLUMNS)
        table.sync(rows({"n1\x1fa": "1.0", "n1\x1fb": "2.0", "n2\x1fc": "3.0", "n2\x1fd": "4.0"}))
        table.focus()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        self.headers.append(str(event.column_key.value))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.selected.append(str(event.row_key.value))


def line_text(table: KeyedTable, y: int) -> str:
    return table.render_lines(Region(0, y, table.size.width, 1))[0].text


def assert_draws_like_datatable(table: KeyedTable) -> None:
    """Every line, segment for segment (styles and the meta mouse handling reads)."""
    table.render_lines(Region(0, 0, table.size.width, table.size.height))
    for y in range(table.size.height):
        assert list(table.render_line(y)) == list(DataTable.render_line(table, y)), y


async def test_keyed_updates_keep_cells_rows_and_the_cursor() -> None:
    app = TableApp()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        t = app.query_one(KeyedTable)
        assert t.row_keys() == ["n1\x1fa", "n1\x1fb", "n2\x1fc", "n2\x1fd"]
        t.move_cursor(row=2)
        await pilot.pause()
        assert t.cursor_key() == "n2\x1fc"
        assert_draws_like_datatable(t)
        kept = {k: t.get_cell(k, "name") for k in t.row_keys()}
        rebuilds = t.rebuilds

        # one cell by key: only that cell is replaced, and it is painted
        t.sync(rows({"n1\x1fa": "1.0", "n1\x1fb": "9.5", "n2\x1fc": "3.0", "n2\x1fd": "4.0"}))
        await pilot.pause()
        assert t.get_cell("n1\x1fb", "rx").plain == "9.5"
        assert all(t.get_cell(k, "name") is v for k, v in kept.items())
        assert "9.5" in line_text(t, 2)  # header, a, b
        assert t.cursor_key() == "n2\x1fc" and t.rebuilds == rebuilds

        # a row comes in first and one goes: the cursor stays on its key
        t.sync(rows({"n0\x1fz": "0.1", "n1\x1fb": "9.5", "n2\x1fc": "3.0", "n2\x1fd": "4.0"}))
        await pilot.pause()
        assert t.row_keys() == ["n0\x1fz", "n1\x1fb", "n2\x1fc", "n2\x1fd"]
        assert t.cursor_key() == "n2\x1fc"

        # a new order (a sort): rows move, the cursor moves with its row
        t.sync(rows({"n2\x1fd": "4.0", "n2\x1fc": "3.0", "n1\x1fb": "9.5", "n0\x1fz": "0.1"}))
        await pilot.pause()
        assert t.row_keys() == ["n2\x1fd", "n2\x1fc", "n1\x1fb", "n0\x1fz"]
        assert t.cursor_key() == "n2\x1fc" and t.cursor_row == 1
        assert t.rebuilds == rebuilds
        assert_draws_like_datatable(t)
        assert "c" in line_text(t, 2) and "4.0" in line_text(t, 1)

        # DataTable's own keyboard and mouse handling still read the drawn lines
        await pilot.press("down", "enter")
        assert app.selected == ["n1\x1fb"]
        await pilot.click(KeyedTable, offset=(12, 0))  # the RX header (Name is 8 + 2 wide)
        await pilot.pause()
        assert app.headers == ["rx"]
        await pilot.hover(KeyedTable, offset=(3, 4))  # hover highlight on row 3
        await pilot.pause()
        assert_draws_like_datatable(t)
        app.set_focus(None)  # the blurred cursor
        await pilot.pause()
        assert_draws_like_datatable(t)


async def test_a_new_column_set_rebuilds_once() -> None:
    app = TableApp()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        t = app.query_one(KeyedTable)
        before = t.rebuilds
        t.set_columns(COLUMNS)  # the same set: nothing happens
        assert t.rebuilds == before and t.row_count == 4
        t.set_columns([*COLUMNS, Column("tx", "TX", 6)])
        assert t.rebuilds == before + 1 and t.row_count == 0
        t.sync([(k, {**c, "tx": Text("7")}) for k, c in rows({"n1\x1fa": "1.0"})])
        await pilot.pause()
        assert t.column_keys == ("name", "rx", "tx") and t.row_keys() == ["n1\x1fa"]
        assert_draws_like_datatable(t)


LAYOUT = [
    Column("host", "Host", None, False, flex=True, min_width=6),
    Column("value", "value", 6),
    Column("rate", "per s", 5, drop=1),
    Column("name", "Counter name", None, False, flex=True, min_width=10, short="Counter"),
    Column("note", "Note", None, False, flex=True, min_width=8, drop=2),
    Column("err", "Error", None, False, flex=True, hide_empty=True),
]


def test_fit_drops_the_least_important_first_and_never_narrows_a_number() -> None:
    content = {"host": 20, "value": 26, "rate": 4, "name": 30, "note": 40, "err": 0}
    wide = fit_columns(LAYOUT, 200, content)
    assert [c.key for c in wide] == ["host", "value", "rate", "name", "note"]  # no error yet
    assert [c.width for c in wide] == [20, 26, 5, 30, 40]  # everything whole
    narrow = fit_columns(LAYOUT, 60, content)
    assert [c.key for c in narrow] == ["host", "value", "rate", "name"]  # note went first
    widths = {c.key: c.width or 0 for c in narrow}
    assert widths["value"] == 26  # a u64 with separators: digits are never dropped
    assert sum(w + 2 for w in widths.values()) <= 60
    tight = fit_columns(LAYOUT, 48, content)
    assert [c.key for c in tight] == ["host", "value", "name"]
    assert {c.key: c.label for c in tight}["name"] == "Counter"  # the short header
    assert fit_columns(LAYOUT, 200, {**content, "err": 12})[-1].key == "err"


async def test_a_width_change_keeps_rows_and_cursor_and_cuts_with_an_ellipsis() -> None:
    app = TableApp()
    async with app.run_test(size=(60, 10)) as pilot:
        await pilot.pause()
        t = app.query_one(KeyedTable)
        t.set_layout(
            [Column("name", "Name", None, False, flex=True, min_width=4), Column("rx", "RX", 6)]
        )
        long = "a-very-long-counter-name-that-will-not-fit"
        data = [
            ("n1\x1fa", {"name": Text(long), "rx": Text("1", justify="right")}),
            ("n1\x1fb", {"name": Text("b"), "rx": Text("123,456,789", justify="right")}),
        ]
        t.sync(data)
        t.move_cursor(row=1)
        await pilot.pause()
        rebuilds = t.rebuilds
        assert t.drawn_cells(0)[0].strip() == long
        await pilot.resize_terminal(30, 10)
        await pilot.pause()
        assert t.rebuilds == rebuilds and t.cursor_key() == "n1\x1fb"
        name, rx = t.drawn_cells(0)[0].strip(), t.drawn_cells(1)[1].strip()
        assert name.endswith("…") and long.startswith(name[:-1])
        assert rx == "123,456,789"  # the number column keeps its widest cell whole
        assert t.virtual_size.width <= t.scrollable_content_region.width
        assert_draws_like_datatable(t)


def test_an_optional_text_column_is_shown_whole_before_a_less_important_one() -> None:
    # The inference table at 120 columns cut "facebook/opt-125m" to "facebook/opt-12…"
    # while it still showed TTFT p99: the model is the more important of the two.
    cols = [
        Column("host", "Host", None, False, flex=True, min_width=6),
        Column("model", "Model", None, False, flex=True, min_width=8, drop=3),
        Column("gen", "gen tok/s", 5),
        Column("p99", "TTFT p99", 8, drop=9),
    ]
    content = {"host": 5, "model": 17, "gen": 4, "p99": 5}
    fit = {c.key: c.width for c in fit_columns(cols, 44, content)}
    assert fit.get("model") == 17 and "p99" not in fit
    wide = {c.key: c.width for c in fit_columns(cols, 60, content)}
    assert wide["model"] == 17 and "p99" in wide  # room for both: both stay
