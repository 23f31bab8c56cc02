"""Success-rate benchmark: a task suite of our own run through the agent loop.

``bench/success_rate.py`` is the entry point; see docs/headless.md.
"""
