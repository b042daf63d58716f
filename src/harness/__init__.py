"""The harness: targets, the sessions driver, guards and recordings.

Chapters (src/chapters) build on it; notebooks call the chapters.
"""
