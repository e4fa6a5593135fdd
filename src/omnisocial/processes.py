"""Process pools of the jobs that spread their work over their threads (corpus, signals, Rasch fits)."""

from __future__ import annotations

import multiprocessing


def fork_context():
    """The multiprocessing context of those pools: fork, or spawn where fork does not exist.

    fork: the workers need not re-import the caller's main module (a Snakemake script has no
    `if __name__ == "__main__"` guard) nor pay its imports again.
    """
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")
