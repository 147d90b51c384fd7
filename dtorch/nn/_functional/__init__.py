"""Implementation files of dtorch.nn.functional, one per family."""
