"""Reporters: one writer per format (console, JSON, Markdown, HTML, JUnit, Prometheus), each taking a pair's or a
cluster's record (judged.py); formats.py names them."""
