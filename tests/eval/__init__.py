"""A package, so that the package-scoped `engine` fixture (conftest.py) is closed when tests/eval ends."""
