"""The package version, at the bottom so any module (the CLI, run manifests) can read it."""

__version__ = "0.1.0"
