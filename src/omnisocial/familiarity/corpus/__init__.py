"""Familiarity corpus stage: `seamless` reads a Seamless Interaction layout into the INTERACTIONS,
SEGMENTS and SPEECH tables; `demo` generates the demo corpus in that layout.
"""
