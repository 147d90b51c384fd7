"""A backend module that cannot be imported (its vendor library is missing)."""

import dtorch_example_dsp_vendor_sdk  # noqa: F401  (not installed anywhere)
