"""linkcheck: validate the direct RoCE link between two DGX Spark-class (GB10) nodes."""

__version__ = "0.1.0"
