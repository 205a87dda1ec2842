"""Code shared by tests and the bench instruments that reuse it (bench scripts import from here, never
the other way round)."""
