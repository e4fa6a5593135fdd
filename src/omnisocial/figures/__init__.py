"""Shared figure layer: `style` (colours, layout, the simulated-data subtitle, deterministic
PNG + PDF saves). The familiarity figure families live in `omnisocial.familiarity.figures`.
"""
