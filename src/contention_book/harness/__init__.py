"""The harness: targets, the sessions driver, guards and recordings.

Chapters (contention_book.chapters) build on it; notebooks call the chapters.
"""
