"""Cell lists of every notebook the project ships (written by scripts/make_notebooks.py)."""
