"""Per-reason counts of the items a scoring command did not score plainly (docs/released-mode.md).

A released file with one bad item is never refused whole: in `released` mode the item is
scored as the released code scores it, in `strict` mode it is left out with its reason.
Either way `ItemReasons` counts how many items each reason touched; the commands print one
line per reason on stderr and write the table (ITEM_REASONS) next to their output
(`reasons_path`), so no drop is silent.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from omnisocial.tables import Column, Contract

ACTIONS = ("scored as released", "excluded")

ITEM_REASONS = Contract(
    "item_reasons",
    (
        Column("command", doc="e.g. 'socialomni who', 'duplexeval rtd'"),
        Column("parser", allowed=("released", "strict")),
        Column("action", allowed=ACTIONS, doc="what was done with the items of this reason"),
        Column("reason"),
        Column("n_items", "int", doc="distinct items the reason touched"),
        Column("example_item"),
        Column("example_message", doc="the first such item's message"),
    ),
    key=("command", "action", "reason"),
)


class ItemReasons:
    """Items touched per (action, reason), in first-seen order."""

    def __init__(self, command: str, parser: str):
        self.command, self.parser = command, parser
        self._items: dict[tuple[str, str], list[str]] = {}
        self._first: dict[tuple[str, str], str] = {}

    def add(self, action: str, reason: str, item_id: str, message: str = "") -> None:
        if action not in ACTIONS:
            raise ValueError(f"unknown action {action!r}")
        key = (action, reason)
        items = self._items.setdefault(key, [])
        if str(item_id) not in items:
            items.append(str(item_id))
        self._first.setdefault(key, message)

    def items(self, action: str) -> set[str]:
        """Every item some reason of `action` touched."""
        return {item for (a, _), v in self._items.items() if a == action for item in v}

    def count(self, action: str | None = None) -> int:
        return sum(len(v) for (a, _), v in self._items.items() if action is None or a == action)

    def table(self) -> pd.DataFrame:
        rows = [
            {
                "command": self.command,
                "parser": self.parser,
                "action": action,
                "reason": reason,
                "n_items": len(items),
                "example_item": items[0],
                "example_message": self._first[(action, reason)],
            }
            for (action, reason), items in self._items.items()
        ]
        return ITEM_REASONS.validate(pd.DataFrame(rows, columns=ITEM_REASONS.names))

    def lines(self) -> list[str]:
        """One line per reason: '<command>: <action>: <reason>: <n> items (e.g. item <id>)'."""
        out = []
        for (action, reason), items in self._items.items():
            noun = "item" if len(items) == 1 else "items"
            out.append(f"{self.command}: {action}: {reason}: {len(items)} {noun} (e.g. item {items[0]})")
        return out

    def report(self, output, stream=None) -> Path:
        """One stderr line per reason, then the table written next to `output` (returns its path)."""
        stream = stream or sys.stderr
        for line in self.lines():
            print(line, file=stream)
        path = reasons_path(output)
        ITEM_REASONS.write(path, self.table())
        return path


def reasons_path(output) -> Path:
    """METRICS.csv -> METRICS.item_reasons.csv (beside the command's output)."""
    output = Path(output)
    return output.with_name(f"{output.stem}.item_reasons.csv")
