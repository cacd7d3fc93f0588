"""Command-line utilities that are not part of the library."""
