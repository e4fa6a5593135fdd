"""omnisocial: reproducible benchmarks of social perception in omni-modal models and people."""

__version__ = "0.1.0"
