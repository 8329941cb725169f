"""A TodoMVC-style Solara app on restlayer's hooks: `python -m examples.todo_app` (see app.py)."""
