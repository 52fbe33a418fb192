"""KeyedTable: DataTable's private state stays untouched, and keyed updates behave."""

from __future__ import annotations

import ast
from pathlib import Path

from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widgets import DataTable

from tui.widgets.keyed_table import Column, KeyedTable, Spec

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
            is_super = (isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name)
                        and owner.func.id == "super")
            if is_self or is_super:
                found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if (isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                        and item.name in private):
                    found.append(f"line {item.lineno}: def {item.name}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "delattr") and len(node.args) > 1
              and isinstance(node.args[1], ast.Constant) and node.args[1].value in private):
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
    return [(k, {"name": Spec(k.split("\x1f")[1], "bold"), "rx": Text(v, justify="right")})
            for k, v in values.items()]


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
