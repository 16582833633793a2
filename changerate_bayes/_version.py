"""The package's version (one place, so that its modules read it without importing the package's namespace)."""

__version__ = "0.1.0"
