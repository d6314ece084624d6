"""Cost: the monthly bill of the stack's fleets, file systems and network within the budget, every item priced;
spot fleets have somewhere to checkpoint to. One rule a module; the bill they read is `_bill`."""

from __future__ import annotations

from ..rule import Rule
from . import missing_checkpoint_storage, missing_prices, monthly_budget
from ._bill import bill, monthly_total

__all__ = ["POLICIES", "bill", "monthly_total"]

POLICIES: list[Rule] = [monthly_budget.POLICY, missing_prices.POLICY, missing_checkpoint_storage.POLICY]
