"""The edge SDK: the `dtorch-edge` command line (demo now; export, build, emulate and flash later)."""
