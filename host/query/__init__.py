"""List queries of projections: declarations resolved, parameters parsed, cursors, documents."""
