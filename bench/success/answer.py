"""Turn a task's ``answer`` into JSON-able data, the same way in the kernel and here.

The harness sends this module's source to the kernel and runs the reference
solutions through it locally, so the model's answer and the expected one are
compared in one shape: numbers as floats, Series as dicts, frames as records,
figures as a summary of what they draw (titles, lines, bars).
"""

from __future__ import annotations

from typing import Any

MISSING = "<no variable named answer>"


def _figure(fig: Any) -> dict[str, Any]:
    axes = []
    for ax in fig.axes:
        bars = [p for p in ax.patches if type(p).__name__ == "Rectangle"]
        legend = ax.get_legend()
        points = [c.get_offsets() for c in ax.collections if type(c).__name__ == "PathCollection"]
        axes.append({
            "title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
            "lines": [[float(y) for y in line.get_ydata()] for line in ax.get_lines()],
            "bars": [float(p.get_height()) for p in bars],
            # Where each bar is (x, y, width, height): its order as read, and whether it lies down.
            "rects": [[float(p.get_x()), float(p.get_y()), float(p.get_width()), float(p.get_height())]
                      for p in bars],
            "bar_groups": sum(1 for c in ax.containers if type(c).__name__ == "BarContainer"),
            "xticks": [t.get_text() for t in ax.get_xticklabels()],
            "yticks": [t.get_text() for t in ax.get_yticklabels()],
            "legend": [t.get_text() for t in legend.get_texts()] if legend is not None else [],
            # A point set by its size and the means of its x and y: which column is on which axis.
            "points": [{"n": len(p), "x_mean": float(p[:, 0].mean()), "y_mean": float(p[:, 1].mean())}
                       for p in points if len(p)],
        })
    return {"figure": axes}


def to_jsonable(obj: Any, depth: int = 0) -> Any:
    if depth > 6:
        return repr(obj)[:200]
    kind = type(obj).__name__
    module = type(obj).__module__
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, float)):
        return float(obj)
    if hasattr(obj, "savefig") and hasattr(obj, "axes"):
        return _figure(obj)
    if hasattr(obj, "get_figure") and hasattr(obj, "get_lines"):
        return _figure(obj.get_figure())
    if module.startswith("numpy") and hasattr(obj, "item") and getattr(obj, "ndim", 1) == 0:
        return to_jsonable(obj.item(), depth + 1)
    if kind == "Series":
        return {str(k): to_jsonable(v, depth + 1) for k, v in obj.to_dict().items()}
    if kind == "DataFrame":
        return [{str(k): to_jsonable(v, depth + 1) for k, v in row.items()}
                for row in obj.to_dict(orient="records")]
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (set, frozenset)):
        return sorted((to_jsonable(v, depth + 1) for v in obj), key=repr)
    if isinstance(obj, (list, tuple)) or (module.startswith(("numpy", "pandas")) and hasattr(obj, "tolist")):
        items = obj.tolist() if hasattr(obj, "tolist") else obj
        return [to_jsonable(v, depth + 1) for v in items]
    if hasattr(obj, "isoformat"):
        return str(obj.isoformat())[:10] if kind in ("Timestamp", "date", "datetime") else str(obj)
    return repr(obj)[:200]
