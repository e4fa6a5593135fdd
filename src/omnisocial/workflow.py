"""What every workflow script shares: logging into the rule's log file."""

from __future__ import annotations

import logging
import sys


def start(smk) -> logging.Logger:
    """Send logging and stderr to the rule's `log:` file and log the rule's params."""
    log_path = smk.log[0]
    stream = open(log_path, "w", buffering=1, encoding="utf-8")  # noqa: SIM115 - lives for the job
    sys.stderr = stream
    logging.basicConfig(
        stream=stream,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logger = logging.getLogger(f"omnisocial.rule.{smk.rule}")
    for name, value in smk.params.items():
        logger.info("param %s = %r", name, value)
    return logger


def threads(smk) -> int:
    return max(1, int(getattr(smk, "threads", 1) or 1))
