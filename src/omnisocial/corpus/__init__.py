"""Corpus readers: turn a source corpus into the INTERACTIONS, SEGMENTS and SPEECH tables."""
