"""A SQL Server simulator for tests (see server.py for what it follows and what it cannot know)."""
