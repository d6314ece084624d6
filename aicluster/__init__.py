"""aicluster: the engine-free core (spec, catalog, plan, offline preview, reports, CLI)."""

__version__ = "0.1.0"
