"""Cost before calls: the planned number of calls of a streaming job, checked against the entry.

A streaming job asks each item once per query time, so it plans sum over items of
len(schedule) calls (an upper bound for a stop-at-first protocol: an item stops at its first
utterance). The job logs the plan, and its price when the entry sets one, before the first
call; an entry's `max_calls` below the plan stops the job before any call (`check_budget`).
Cached steps count in the plan: the check is on what the job could ask, not on what a
resumed run still has to (so a plan over budget fails the same on every run).

A job of several streams (Omni-DuplexEval's RTD and PR parts) checks the sum of its parts'
plans once, before its first call (`check_job_budget`, naming every part), and runs each
part without a check of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from omnisocial.models.runner import InferenceAborted
from omnisocial.streaming.protocol import StreamItem


class CallBudgetExceeded(InferenceAborted):
    """The job's planned calls exceed its entry's `max_calls`: no call was made."""


@dataclass(frozen=True)
class CallPlan:
    model: str
    items: int
    steps: int  # query times over all items
    max_steps: int  # the longest item's
    upper_bound: bool  # stop-at-first: items may stop early

    @property
    def calls(self) -> int:
        return self.steps

    def describe(self) -> str:
        bound = "at most " if self.upper_bound else ""
        return (
            f"{self.model}: {bound}{self.calls} planned calls ({self.items} items x up to "
            f"{self.max_steps} steps{', stopping at the first utterance' if self.upper_bound else ''})"
        )


def plan_calls(model: str, items: Sequence[StreamItem], stop_at_first: bool) -> CallPlan:
    lengths = [len(item.schedule) for item in items]
    return CallPlan(model, len(items), sum(lengths), max(lengths, default=0), bool(stop_at_first))


def price_line(plan: CallPlan, entry: Mapping) -> str:
    """The plan's price from the entry's `price_per_call` / `price_per_1k_tokens` ('' when neither)."""
    parts = []
    per_call = entry.get("price_per_call")
    if per_call is not None:
        parts.append(f"{plan.calls * float(per_call):.2f} at price_per_call {per_call}")
    per_1k = entry.get("price_per_1k_tokens")
    if per_1k is not None:
        parts.append(f"price_per_1k_tokens {per_1k} (token counts are known only after the calls)")
    return "; ".join(parts)


def check_budget(plan: CallPlan, max_calls: int | None) -> None:
    """Raise `CallBudgetExceeded` naming the numbers when the plan exceeds `max_calls` (None: no cap)."""
    if max_calls is None or plan.calls <= int(max_calls):
        return
    raise CallBudgetExceeded(
        f"{plan.model}: planned {plan.calls} calls ({plan.items} items x up to {plan.max_steps} steps"
        f"{', an upper bound: items stop at their first utterance' if plan.upper_bound else ''}) exceed "
        f"the entry's max_calls {int(max_calls)}; no call was made (raise max_calls, or stream fewer "
        "items or fewer steps)"
    )


def check_job_budget(model: str, parts: Mapping[str, CallPlan], max_calls: int | None) -> int:
    """The job's total planned calls over its named `parts`; `CallBudgetExceeded` naming each
    part's plan when the total exceeds `max_calls` (None: no cap). Call before any part runs."""
    total = sum(plan.calls for plan in parts.values())
    if max_calls is None or total <= int(max_calls):
        return total
    named = ", ".join(f"{name} {plan.calls}" for name, plan in parts.items())
    raise CallBudgetExceeded(
        f"{model}: planned {total} calls for the whole job ({named}) exceed the entry's max_calls "
        f"{int(max_calls)}; no call was made (raise max_calls, or stream fewer items or fewer steps)"
    )
