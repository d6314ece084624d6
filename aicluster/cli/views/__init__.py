"""What commands print: rich tables and lines built from plain plan, preview and run objects. Only this package
and console.py import rich; a command prints what a view returns (or lets a view print the plan's details)."""
