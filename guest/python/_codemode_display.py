"""A cell's last value, shown as a notebook shows it: which statement is
the value (a trailing ``;`` hides it, as in IPython), its text (``repr``;
a pandas DataFrame or Series as its text table), a matplotlib figure as an
image (the ``runtime.show`` path), and the value as JSON when it is plain
data. Everything is bounded: a huge repr is cut, a repr that raises
becomes a note, the JSON check walks a bounded number of items."""

import ast
import json
import math
from typing import Any

import _codemode

# Characters of a value's text kept (head and tail); the Rust side and the
# host bound it again.
MAX_TEXT = 32 * 1024
# Bytes of a value's JSON; beyond this there is no `result`.
MAX_JSON = 64 * 1024
# Items (containers, keys and scalars) and nesting the JSON check looks at.
MAX_ITEMS = 10_000
MAX_DEPTH = 64
# Rows and columns of a DataFrame's table, as pandas' own display defaults.
TABLE_ROWS = 60
TABLE_COLUMNS = 20
# Integers JSON readers keep exactly (the host reads i64/u64).
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1

# (text, JSON text or "") as `_codemode.finish` takes it.
Shown = tuple[str, str]


def last_expression(code: str, tree: ast.Module) -> ast.Expr | None:
    """The statement whose value the cell shows: the last one, if it is an
    expression not followed by ``;``."""
    if not tree.body:
        return None
    last = tree.body[-1]
    if not isinstance(last, ast.Expr) or last.end_lineno is None or last.end_col_offset is None:
        return None
    # Offsets count UTF-8 bytes; the tokenizer's lines end at "\n".
    lines = code.encode("utf-8", "surrogatepass").split(b"\n")
    rest = lines[last.end_lineno - 1][last.end_col_offset :]
    if rest.lstrip().startswith(b";"):
        return None
    return last


def show(value: Any) -> Shown | None:
    """What the cell shows for ``value``; None shows nothing. Runs the
    value's own code (``repr``, ``to_string``, ``savefig``): an exception
    there becomes a note, an interrupt propagates."""
    if value is None:
        return None
    if _is_figure(value):
        # Imported here: the mcp package is not needed before a figure is.
        from mcp import _rich

        try:
            _codemode.add_rich(*_rich.to_rich(value))
        except Exception as exc:  # the figure's own failure is the note
            return _note("the figure could not be drawn", exc), ""
        return None
    return _text(value), _json(value)


def _module_of(value: Any) -> str:
    module = getattr(type(value), "__module__", "")
    return module if isinstance(module, str) else ""


def _from(value: Any, package: str) -> bool:
    """Whether the value's type comes from `package` (pandas 3 says its
    classes live in ``pandas`` itself, pandas 2 in ``pandas.core.frame``)."""
    module = _module_of(value)
    return module == package or module.startswith(package + ".")


def _is_figure(value: Any) -> bool:
    return _from(value, "matplotlib") and type(value).__name__ in ("Figure", "SubFigure")


def _text(value: Any) -> str:
    kind = type(value).__name__
    try:
        if _from(value, "pandas") and kind == "DataFrame":
            text = value.to_string(max_rows=TABLE_ROWS, max_cols=TABLE_COLUMNS, show_dimensions=True)
            # Some pandas versions leave the dimensions out of a frame that
            # fits; a model reading the table needs them either way.
            rows, columns = value.shape
            footer = f"[{rows} rows x {columns} columns]"
            if isinstance(text, str) and not text.rstrip().endswith(footer):
                text = f"{text}\n\n{footer}"
        elif _from(value, "pandas") and kind == "Series":
            text = value.to_string(max_rows=TABLE_ROWS, length=True, dtype=True, name=True)
        else:
            text = repr(value)
        if not isinstance(text, str):
            raise TypeError(f"it returned {type(text).__name__}, not str")
    except Exception as exc:  # the value's own failure is the note
        return _note(f"repr() of this {kind} failed", exc)
    return _clip(text.encode("utf-8", "replace").decode("utf-8"))


def _note(what: str, exc: Exception) -> str:
    try:
        detail = f"{type(exc).__name__}: {exc}"
    except Exception:  # str(exc) can raise too
        detail = type(exc).__name__
    return _clip(f"[codemode: {what}: {detail}]")


def _clip(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    head, tail = MAX_TEXT // 4, MAX_TEXT * 3 // 4
    return f"{text[:head]}\n[... {len(text) - head - tail} characters cut ...]\n{text[-tail:]}"


def _json(value: Any) -> str:
    """``value`` as JSON text if it is plain data within the bounds, else ""."""
    if not _is_plain(value):
        return ""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        encoded = text.encode("utf-8")
    except (ValueError, TypeError, RecursionError):
        return ""
    return text if len(encoded) <= MAX_JSON else ""


def _is_plain(value: Any) -> bool:
    """Exact built-in types only (no subclass runs code of its own), finite
    floats, integers within 64 bits, str keys; a bounded walk."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > MAX_ITEMS or depth > MAX_DEPTH:
            return False
        kind = type(item)
        if item is None or kind is bool or kind is str:
            continue
        if kind is int:
            if not _INT_MIN <= item <= _INT_MAX:
                return False
        elif kind is float:
            if not math.isfinite(item):
                return False
        elif kind not in (list, tuple, dict) or seen + len(stack) + len(item) > MAX_ITEMS:
            return False
        elif kind is dict:
            if any(type(key) is not str for key in item):
                return False
            stack.extend((child, depth + 1) for child in item.values())
        else:
            stack.extend((child, depth + 1) for child in item)
    return True
